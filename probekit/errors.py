"""User-facing errors: the CLI prints each as one line (no traceback) and exits non-zero."""


class ProbekitError(Exception):
    """Bad input from the user (arguments, params, templates, data, sources); the message says what to fix."""


class UsageError(ProbekitError):
    """A command-line argument is wrong or names something that does not exist."""


class ParamsError(ProbekitError, ValueError):
    """A params file (or a probe's built-in defaults) is invalid; the message names the file and the key."""


class DataError(ProbekitError, ValueError):
    """A data file is malformed; the message names the file and the line."""


SHOWN = 80
"""How many characters of a value an error message quotes at most (:func:`shown`)."""

_CONTAINERS = {list: ("[", "]"), tuple: ("(", ")"), set: ("{", "}"), frozenset: ("frozenset({", "})"),
               dict: ("{", "}")}


def shown(value, limit: int = SHOWN) -> str:
    """``repr(value)`` as an error message quotes it: at most ``limit`` characters, a longer one cut with "…" and
    followed by the value's size (characters of a string, items of a collection). Bounded work whatever the value:
    the repr is built piece by piece and stops past ``limit``, so a YAML alias bomb (millions of items as shared
    references) or a recursive list is never expanded."""
    pieces, size = [], 0
    for piece in _repr_pieces(value, limit):
        pieces.append(piece)
        size += len(piece)
        if size > limit:
            break
    text = "".join(pieces)
    if len(text) <= limit:
        return text
    sized = len(value) if isinstance(value, (str, bytes, *_CONTAINERS)) else None
    unit = "character" if isinstance(value, str) else "byte" if isinstance(value, bytes) else "item"
    return text[:max(limit - 1, 1)] + "…" + (f" ({sized:,} {unit}{'' if sized == 1 else 's'})" if sized is not None
                                            else "")


def clipped(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (the last one "…") when longer."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _repr_pieces(value, limit: int):
    """``repr(value)`` in pieces, lazily: builtin containers walked item by item, strings and bytes sliced to just
    past ``limit`` first, anything else its own repr (or ``<int of N bits>``, ``<TYPE>`` when that fails)."""
    kind = type(value)
    if kind in _CONTAINERS and (value or kind not in (set, frozenset)):   # set(), frozenset(): their own repr
        if kind is tuple and len(value) == 1:
            yield "("
            yield from _repr_pieces(value[0], limit)
            yield ",)"
            return
        opening, closing = _CONTAINERS[kind]
        yield opening
        for i, item in enumerate(value.items() if kind is dict else value):
            if i:
                yield ", "
            if kind is dict:
                yield from _repr_pieces(item[0], limit)
                yield ": "
                item = item[1]
            yield from _repr_pieces(item, limit)
        yield closing
    elif kind in (str, bytes):
        yield repr(value[:limit + 2])
    else:
        try:
            yield repr(value)
        except ValueError:   # an int past sys.get_int_max_str_digits()
            yield f"<{kind.__name__} of {value.bit_length()} bits>" if kind is int else f"<{kind.__name__}>"
        except Exception:
            yield f"<{kind.__name__}>"
