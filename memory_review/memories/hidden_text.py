"""Text a person cannot see, or sees as something it is not (issue 31, item 4).

A memory is read by people on a screen and by agents as raw text. What an agent reads but a
person does not see is how a memory is poisoned: an instruction hidden in Unicode tag
characters, a zero-width space that splits a word a filter looks for, a right-to-left override
that shows an account number backwards, a payee domain spelt with a Cyrillic "а". Each finding
names the characters and where they are; `reveal` renders text with every one of them shown
openly, so the review card and the memory page show what the agent will read.

What is looked for:
* invisible characters: zero-width spaces and joiners, word joiners, the byte-order mark, soft
  hyphens, other format characters (Unicode category Cf), Hangul fillers and the blank braille
  cell (letters that draw nothing), and variation selectors that follow no symbol;
* bidirectional controls (embeddings, overrides, isolates and marks), which reorder what is shown;
* Unicode tag characters (U+E0000-U+E007F): invisible copies of ASCII, decoded here, so the hidden
  sentence itself is shown;
* look-alikes: a word that mixes scripts ("pаypal" with a Cyrillic "а"), a word written wholly in
  Cyrillic or Greek letters that each look Latin inside Latin text ("соm"), and letters that
  Unicode's compatibility form turns into plain ASCII (full-width "ｐａｙ", mathematical bold).

Python's own `unicodedata` is enough: the categories and names it has for each character are
the ones Unicode's security report (UTS #39) starts from, and no maintained library adds a
check this needs."""

import re
import unicodedata
from dataclasses import dataclass

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

ZERO_WIDTH = "\u200b\u2060\ufeff\u180e"
JOINERS = "\u200c\u200d"  # zero-width (non-)joiners: part of emoji sequences, Persian and Indic words
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # embeddings, overrides, isolates
MARKS = "\u200e\u200f\u061c"  # direction marks: right-to-left text needs them; Latin text does not
# Letters or marks that draw nothing and are not format characters (Unicode's default-ignorable
# code points outside category Cf): the combining grapheme joiner, Khmer's inherent vowels,
# Mongolian's free variation selectors, Hangul's fillers, and the blank braille cell.
BLANK_LETTERS = "\u034f\u17b4\u17b5\u180b\u180c\u180d\u180f\u115f\u1160\u3164\uffa0\u2800"
KEYCAP, BLACK_FLAG, CANCEL_TAG = "\u20e3", "\U0001f3f4", "\U000e007f"
TAGS = range(0xE0000, 0xE0080)
VARIATION_SELECTORS = (range(0xFE00, 0xFE10), range(0xE0100, 0xE01F0))

# Cyrillic and Greek letters that each look like a Latin one (from UTS #39's confusables, the
# common ones). A word made only of these, in text that is otherwise Latin, reads as Latin.
LATIN_LOOKALIKES = {
    **dict(zip("аеорсухіјѕһԁԛԝӏАВЕКМНОРСТХІЈЅ", "aeopcyxijshdqwlABEKMHOPCTXIJS", strict=True)),
    **dict(zip("οαρνικυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "oapvikuxABEZHIKMNOPTYX", strict=True)),
}
WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Scripts with letters drawn like Latin ones: a word mixing one with Latin imitates a Latin word.
# (Latin beside Katakana, "Tシャツ", or a modifier letter, "Hawaiʻi", imitates nothing.)
CONFUSABLE_SCRIPTS = {"CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE"}
# Letters drawn as another form of Latin ones: full-width, mathematical alphanumerics, circled
# and squared letters. (Superscripts, "m²", and ordinals, "1º", are what they look like.)
LOOKALIKE_FORMS = (range(0xFF21, 0xFF3B), range(0xFF41, 0xFF5B), range(0x1D400, 0x1D800),
                   range(0x24B6, 0x24EA), range(0x1F130, 0x1F18A))  # fmt: skip


@dataclass(frozen=True)
class Finding:
    kind: str  # invisible, bidi, tags, lookalike
    start: int
    end: int
    note: str  # in words, for people: what it is, and what it hides or imitates


def _name(char: str) -> str:
    return f"{unicodedata.name(char, 'UNNAMED').lower()} (U+{ord(char):04X})"


def _invisible(text: str, at: int) -> bool:
    char = text[at]
    before = text[at - 1] if at else ""
    after = text[at + 1] if at + 1 < len(text) else ""
    if char in ZERO_WIDTH or char in BLANK_LETTERS:
        return True
    if char in JOINERS:  # hides only beside plain ASCII: between emoji or non-Latin letters it joins
        return not before or not after or before.isascii() or after.isascii()
    if char in MARKS:
        return not any(unicodedata.bidirectional(c) in ("R", "AL") for c in text)
    if any(ord(char) in selectors for selectors in VARIATION_SELECTORS):
        # An emoji's presentation selector follows a symbol, or a keycap's digit; elsewhere it hides.
        return not (before and unicodedata.category(before) in ("So", "Sk")) and after != KEYCAP
    return unicodedata.category(char) == "Cf" and char not in BIDI and ord(char) not in TAGS


def _flag(text: str, start: int, end: int) -> bool:
    """A subdivision flag (England's, Scotland's): the black flag, a few tag letters, the cancel tag."""
    letters = text[start : end - 1]
    return (
        start > 0
        and text[start - 1] == BLACK_FLAG
        and text[end - 1] == CANCEL_TAG
        and 2 <= len(letters) <= 6
        and all(chr(ord(c) - 0xE0000).isalnum() for c in letters)
    )


def findings(text: str) -> list[Finding]:
    """Every hidden or look-alike stretch of `text`, in order."""
    if text.isascii():  # most memories: nothing can hide in ASCII (checked in C, not a character at a time)
        return []
    found: list[Finding] = []
    at = 0
    while at < len(text):
        char = text[at]
        if ord(char) in TAGS:
            end = at
            while end < len(text) and ord(text[end]) in TAGS:
                end += 1
            hidden = "".join(chr(ord(c) - 0xE0000) for c in text[at:end] if 0x20 <= ord(c) - 0xE0000 < 0x7F)
            if not _flag(text, at, end):
                found.append(
                    Finding("tags", at, end, f"{end - at} invisible tag characters spelling {hidden!r}")
                )
            at = end
            continue
        if char in BIDI or (char in MARKS and _invisible(text, at)):
            found.append(Finding("bidi", at, at + 1, f"{_name(char)}, which reorders the text after it"))
        elif _invisible(text, at):
            found.append(Finding("invisible", at, at + 1, f"{_name(char)}, which shows nothing"))
        at += 1
    latin_text = _has_latin(text)
    shown = {at for finding in found for at in range(finding.start, finding.end)}
    for word in WORD.finditer(text):
        if shown.intersection(range(word.start(), word.end())):
            continue  # a word around a hidden letter (a Hangul filler): the letter is shown already
        if note := _lookalike(word.group(), latin_text):
            found.append(Finding("lookalike", word.start(), word.end(), note))
    return sorted(found, key=lambda finding: finding.start)


def _script(char: str) -> str | None:
    if not char.isalpha():
        return None
    return unicodedata.name(char, "UNKNOWN").split(" ")[0]


def _has_latin(text: str) -> bool:
    return any(_script(char) == "LATIN" for char in text)


def _lookalike(word: str, latin_text: bool) -> str | None:
    if any(any(ord(char) in forms for forms in LOOKALIKE_FORMS) for char in word):
        plain = unicodedata.normalize("NFKC", word)
        return f"“{word}” is written in look-alike letters for “{plain}”"
    scripts = {script for char in word if (script := _script(char))}
    if "LATIN" in scripts and scripts & CONFUSABLE_SCRIPTS:
        others = ", ".join(sorted(s.title() for s in scripts & CONFUSABLE_SCRIPTS))
        foreign = "".join(char for char in word if _script(char) in CONFUSABLE_SCRIPTS)
        return f"“{word}” mixes Latin letters with {others} ones ({foreign})"
    if (
        latin_text
        and len(word) >= 3  # not a one- or two-letter word of a Russian or Greek sentence
        and scripts <= {"CYRILLIC", "GREEK"}
        and all(char in LATIN_LOOKALIKES for char in word)
    ):
        latin = "".join(LATIN_LOOKALIKES[c] for c in word)
        written = " and ".join(sorted(script.title() for script in scripts))
        return f"“{word}” looks like “{latin}” but is written in {written} letters"
    return None


def without_hidden(text: str) -> str:
    """`text` with every hidden character taken out (look-alike letters stay: they are seen), for
    a person to start a corrected version from."""
    cut = {
        at
        for finding in findings(text)
        if finding.kind != "lookalike"
        for at in range(finding.start, finding.end)
    }
    return "".join(char for at, char in enumerate(text) if at not in cut) if cut else text


def as_read(text: str) -> str:
    """`text` as a filter should read it: hidden characters taken out, look-alike forms folded to
    the letters they imitate (NFKC), and every run of spaces one space (line breaks kept), so
    "Ig<zero-width space>nore  previous" reads "Ignore previous"."""
    return re.sub(r"[^\S\n]+", " ", unicodedata.normalize("NFKC", without_hidden(text)))


def in_words(found: list[Finding]) -> list[str]:
    """One sentence a finding, for the API's flags and a hold's reason."""
    return [finding.note for finding in found]


def reveal(text: str) -> SafeString:
    """`text` as HTML, with every hidden character shown as a marked label in its place (and so
    removed: a bidirectional override no longer reorders what follows), hidden tag text spelt
    out, and look-alike words marked with what they imitate."""
    found = findings(text)
    if not found:
        return escape(text)
    out: list[str] = []
    at = 0
    for finding in found:
        if finding.start < at:  # a look-alike word that holds a hidden character already shown
            continue
        out.append(escape(text[at : finding.start]))
        shown = text[finding.start : finding.end]
        if finding.kind == "lookalike":
            out.append(format_html('<mark class="lookalike" title="{}">{}</mark>', finding.note, shown))
        else:
            out.append(format_html('<mark class="hidden-text">[{}]</mark>', finding.note))
        at = finding.end
    out.append(escape(text[at:]))
    return mark_safe("".join(out))  # noqa: S308  (each piece escaped above)
