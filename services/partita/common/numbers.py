"""DynamoDB numbers: arbitrary-precision decimals with DynamoDB's limits.

A number is never a Python float. DynamoDB keeps up to 38 significant digits and
magnitudes from 1e-130 to below 1e126; it answers with the number normalised (no
exponent, no superfluous zeros), so "1.50" is stored and returned as "1.5".
"""

from __future__ import annotations

import decimal
from decimal import Decimal

from partita.common import errors

MAX_DIGITS = 38
# Enough precision that arithmetic on two valid numbers is exact before the limits
# below are checked; DynamoDB rejects results it cannot store rather than rounding.
CONTEXT = decimal.Context(prec=80, Emax=999_999, Emin=-999_999, traps=[decimal.InvalidOperation])

_INVALID = "The parameter cannot be converted to a numeric value"
_TOO_PRECISE = "Attempting to store more than 38 significant digits in a Number"
_OVERFLOW = "Number overflow. Attempting to store a number with magnitude larger than supported range"
_UNDERFLOW = "Number underflow. Attempting to store a number with magnitude smaller than supported range"


def invalid_number(text: str) -> errors.DynamoError:
    """DynamoDB's error for a number string it cannot parse (dynalite's tests, recorded
    against DynamoDB, and Alternator's test_invalid_numbers): the text is named unless
    it is empty."""
    return errors.validation(f"{_INVALID}: {text}" if text else _INVALID)


def parse_number(text: str) -> Decimal:
    """Parse and check a DynamoDB number string; raises ValidationException."""
    if not isinstance(text, str):
        raise errors.validation(_INVALID)
    # Decimal() also accepts non-ASCII digits (Arabic-Indic, ...) and underscores; DynamoDB does not.
    if not text or len(text) > 1000 or not text.isascii() or text.strip() != text or "_" in text:
        raise invalid_number(text)
    try:
        value = Decimal(text)
    except decimal.InvalidOperation:
        raise invalid_number(text) from None
    if not value.is_finite():
        raise invalid_number(text)
    return check_limits(value)


def check_limits(value: Decimal) -> Decimal:
    """Raise DynamoDB's error if `value` cannot be stored; return it normalised.

    The checks read the digits and the exponent as written, before any arithmetic in a
    bounded context: "1e100000000" must be an overflow, not silently Infinity.
    """
    if value.is_zero():
        return Decimal(0)
    significant = bytes(value.as_tuple().digits).rstrip(b"\0")  # trailing zeros do not count
    if len(significant) > MAX_DIGITS:
        raise errors.validation(_TOO_PRECISE)
    adjusted = value.adjusted()  # exponent of the leading digit
    if adjusted >= 126:
        raise errors.validation(_OVERFLOW)
    if adjusted < -130:
        raise errors.validation(_UNDERFLOW)
    return value.normalize(CONTEXT)


def check_arithmetic_result(value: Decimal) -> Decimal:
    """check_limits for the result of `+`/`-` in an UpdateExpression: DynamoDB reports a
    result that needs more than 38 digits (1e50 + 1) as an overflow, not as too precise
    (Alternator's test_update_expression_plus_imprecise, recorded against DynamoDB)."""
    try:
        return check_limits(value)
    except errors.DynamoError as error:
        if error.message == _TOO_PRECISE:
            raise errors.validation(_OVERFLOW) from None
        raise


def format_number(value: Decimal) -> str:
    """The canonical text DynamoDB returns: plain notation, no trailing zeros."""
    if value.is_zero():
        return "0"
    return format(value.normalize(CONTEXT), "f")


def canonical(text: str) -> str:
    """Validate a number string and return its canonical form."""
    return format_number(parse_number(text))
