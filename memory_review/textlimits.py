"""String lengths in the unit Oracle counts.

NVARCHAR2(n) holds n UTF-16 code units (AL16UTF16): a character beyond the Basic Multilingual
Plane, an emoji for one, takes two. Python's len() counts code points, so a subject of 101
emoji passes `len(s) <= 200` and then fails on Oracle with ORA-12899, a 500 instead of a 400.
So every string the API or a form accepts into a character column is measured with `units()`
(the oracle app adds `MaxUnitsValidator` to every model CharField, which covers model forms and
the admin), and text cut to fit a column is cut with `fit()`. The rule is the same on every
database, so what passes on PostgreSQL in the tests passes on Oracle.
"""

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator
from django.utils.deconstruct import deconstructible


def units(text: str) -> int:
    """UTF-16 code units: what NVARCHAR2 counts."""
    return len(text.encode("utf-16-le")) // 2


def fit(text: str, limit: int) -> str:
    """At most `limit` units, never splitting a character in two."""
    encoded = text.encode("utf-16-le")
    if len(encoded) <= 2 * limit:
        return text
    return encoded[: 2 * limit].decode("utf-16-le", errors="ignore")  # a half pair is dropped


def too_long(text: str, limit: int) -> str | None:
    """The message for a string over `limit` units, or None."""
    n = units(text)
    if n <= limit:
        return None
    wide = (
        " (an emoji or other character outside the Basic Multilingual Plane counts as 2)"
        if n != len(text)
        else ""
    )
    return f"is {n} characters long as the database counts them{wide}; the limit is {limit}"


@deconstructible
class MaxUnitsValidator:
    code = "max_length"

    def __init__(self, limit: int):
        self.limit = limit

    def __call__(self, value) -> None:
        if isinstance(value, str) and (message := too_long(value, self.limit)):
            raise ValidationError(f"This value {message}.", code=self.code)

    def __eq__(self, other) -> bool:
        return isinstance(other, MaxUnitsValidator) and other.limit == self.limit


class CharField(forms.CharField):
    """A form's CharField whose max_length is counted as the database counts it."""

    def __init__(self, *args, max_length: int | None = None, **kwargs):
        super().__init__(*args, max_length=max_length, **kwargs)
        if max_length is not None:
            self.validators[:] = [*without_code_point_limits(self.validators), MaxUnitsValidator(max_length)]


def without_code_point_limits(validators: list) -> list:
    return [v for v in validators if not isinstance(v, MaxLengthValidator)]
