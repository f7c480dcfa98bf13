"""Debian's headless Chromium, as the browser tests and bench/review_browser.py start it."""

import shutil

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


def start(width: int = 1280, height: int = 1000, *, phone: bool = False, cache: bool = True):
    """A headless Chromium; `phone` emulates a phone's viewport (a window cannot be narrower than
    500 px); without `cache` nothing is kept between loads (a cold load every time)."""
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--window-size={width},{height}",
    ):  # fmt: skip
        options.add_argument(flag)
    if not cache:
        options.add_argument("--disk-cache-size=1")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if phone:
        options.add_experimental_option(
            "mobileEmulation", {"deviceMetrics": {"width": width, "height": height, "pixelRatio": 3}}
        )
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=DRIVER))
