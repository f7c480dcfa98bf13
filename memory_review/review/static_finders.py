"""Serves plotly.js from the installed plotly package, so the charts need no CDN and always match
the plotly that builds their figures. Only that one file: the package's data folder holds more."""

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PATH = "plotly/plotly.min.js"
SOURCE = Path(plotly.__file__).parent / "package_data"


class PlotlyFinder(BaseFinder):
    def check(self, **kwargs):
        if not (SOURCE / "plotly.min.js").is_file():
            from django.core.checks import Error

            return [Error(f"plotly.min.js is missing from {SOURCE}", id="review.E001")]
        return []

    def find(self, path, find_all=False, **kwargs):
        # As Django's own finders do: no match is an empty list, whatever find_all says.
        if path != PATH:
            return []
        match = str(SOURCE / "plotly.min.js")
        return [match] if find_all else match

    def list(self, ignore_patterns):
        storage = FileSystemStorage(location=str(SOURCE))
        storage.prefix = "plotly"
        yield "plotly.min.js", storage
