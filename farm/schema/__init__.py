"""The one way a file's fields are declared: attrs classes whose fields say their default, doc, check and
allowed values, from which both the reader and the JSON Schema derive.

    @attrs.frozen
    class RtPolicy:
        policy: Literal["rr", "fifo"] = setting(doc="chrt -r or -f")
        priority: int = setting(doc="1-99", check=number(1, 99, whole=True))
        cpus: tuple[int, ...] | None = setting(None, doc="the cores they run on (taskset)")

        def validate(self, given):            # checks across fields, after each field's own
            ...                                # raise Invalid("problem", key="cpus")

:func:`farm.schema.read.structure` builds such a class from a YAML mapping farm.config loaded (a
:class:`~farm.config.Node`, which knows its file and the line of each key), every value checked once,
when the file is read, each problem a :class:`~farm.errors.JobError` naming ``file:line: field.path``;
:func:`farm.schema.jsonschema.json_schema` gives the JSON Schema of the same class (``farm schema``),
the ``doc`` its ``description``.

A field's type hint says what the file may give (``int``, ``float``, ``str``, ``bool``, ``Path``,
``Literal[...]``, a list or tuple of them, ``dict[str, X]``, another such class, ``X | None``, a union of a
scalar and a class); checked strictly (``"3"`` is no integer, ``true`` no number). A field whose file form
is not its type (``memory: 512M`` -> ``memory_mb``) gives ``parse`` (the file's value -> the field's, or
:class:`Invalid`) and ``schema`` (the file form's JSON Schema).

A class refuses every key it does not declare, unless it says whose the others are: ``OPEN = "labgrid's:
..."`` (a file farm shares with another reader, a labgrid env file's target options): those are left to
their reader, and the JSON Schema allows them with that description.

This module imports no cattrs: a class is declared (and ``farm --help`` imports many) without it; the
reader imports it when a file is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import attrs

META = "farm.schema"
#: the field has no default: a file must give it
REQUIRED = attrs.NOTHING


class Invalid(ValueError):
    """A value, or a class's fields together, that the file may not have: ``problem`` is said after
    ``file:line: field``; ``key``, from a class's ``validate``, names the field it is about (None: the
    mapping as a whole; a tuple: a path below it, ``("setups", 1, "name")``)."""

    def __init__(self, problem: str, key: str | tuple[str | int, ...] | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.key = key


#: what a file says a value is, by the type it is read as
KIND_NAMES: dict[Any, str] = {str: "a string", int: "an integer", float: "a number", bool: "true/false",
                              list: "a list", tuple: "a list", dict: "a mapping", Path: "a string",
                              type(None): "null"}


class WrongType(Invalid):
    """A value of another YAML type than the field's: ``expected an integer, got str '3'``."""

    def __init__(self, expected: str, value: Any, shape: bool = False) -> None:
        super().__init__(f"expected {expected}, got {got(value)}")
        self.expected = expected
        self.value = value
        #: ``expected`` is a class's shape (``a mapping like {env: ...}``): a list item says it without ``got``
        self.shape = shape


class Missing(Invalid):
    """A required field the mapping lacks."""


def got(value: Any) -> str:
    """A value as a problem shows what it got: ``True``, ``str 'three'``."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    kind = "mapping" if isinstance(value, Mapping) else type(value).__name__
    return f"{kind} {dict(value) if isinstance(value, Mapping) else value!r}"


class Unknown(Invalid):
    """A key the mapping may not have."""

    def __init__(self, name: str, allowed: list[str], message: str | None = None, **where: Any) -> None:
        import difflib  # when a key is refused, not when a class is declared

        close = difflib.get_close_matches(name, allowed, n=1)
        problem = (message or "unknown field (allowed: {allowed})").format(allowed=", ".join(sorted(allowed)))
        super().__init__(problem + (f"; did you mean {close[0]!r}?" if close else ""), **where)


@attrs.frozen
class Setting:
    """What a field of a file is, besides its type and default (see :func:`setting`)."""

    doc: str = ""
    #: the value -> a problem (what is wrong with it), or None
    check: Callable[[Any], str | None] | None = None
    #: the values it may take (a JSON Schema ``enum``; another is refused naming them)
    choices: tuple[Any, ...] | None = None
    #: what a refused choice is told besides the allowed values
    hint: str = ""
    #: the file's name of the field, where it is not the attribute's (``memory`` for ``memory_mb``)
    key: str | None = None
    #: the file's value -> the field's (raises :class:`Invalid`), instead of structuring by the type hint
    parse: Callable[[Any], Any] | None = None
    #: the JSON Schema of the file's form, where the type hint does not say it (with ``parse``)
    schema: Mapping[str, Any] | None = None
    #: a path relative to the folder of the file that gives it
    relative: bool = False
    #: False: not a field of the file (set by farm: a flow's NIC, where a value was given)
    read: bool = True
    #: (name, value) -> None or a JobError, ``name`` the class's ``LABEL`` and the field's (benchmark params)
    named_check: Callable[[str, Any], None] | None = None
    #: not a field of the file: where the file gives the key named here (``file:line: field``), for an error
    #: found later (a path checked when the image is made)
    where_of: str | None = None


def setting(default: Any = REQUIRED, *, doc: str = "", check: Callable[[Any], str | None] | None = None,
            choices: Iterable[Any] | None = None, hint: str = "", key: str | None = None,
            parse: Callable[[Any], Any] | None = None, schema: Mapping[str, Any] | None = None,
            relative: bool = False, read: bool = True, factory: Callable[[], Any] | None = None,
            type: Any = None, **field_args: Any) -> Any:
    """A field of a file (the module docstring): its ``default`` (none: required), its ``doc``, its
    ``check`` (value -> problem or None), its ``choices``; ``key``, ``parse``, ``schema``, ``relative``,
    ``read`` as :class:`Setting` says. ``type``: the type, for a class made with ``attrs.make_class``."""
    if schema is None and parse is not None:
        schema = getattr(parse, "schema", None)
    read = read and "where_of" not in field_args
    info = Setting(doc=doc, check=check, choices=tuple(choices) if choices is not None else None, hint=hint,
                   key=key, parse=parse, schema=schema, relative=relative, read=read,
                   named_check=field_args.pop("named_check", None), where_of=field_args.pop("where_of", None))
    metadata = {**field_args.pop("metadata", {}), META: info}
    if factory is not None:
        return attrs.field(factory=factory, metadata=metadata, type=type, **field_args)
    return attrs.field(default=default, metadata=metadata, type=type, **field_args)


def setting_of(field: attrs.Attribute) -> Setting:
    """The field's :class:`Setting` (a plain attrs field has the default one)."""
    return field.metadata.get(META) or Setting()


def key_of(field: attrs.Attribute) -> str:
    """The file's name of ``field``."""
    return setting_of(field).key or field.name


def read_fields(cls: type) -> list[attrs.Attribute]:
    """The fields of ``cls`` a file gives (not those farm sets, ``read=False``)."""
    return [f for f in attrs.fields(cls) if f.init and setting_of(f).read]


def keys(cls: type) -> list[str]:
    """The keys a file's mapping of ``cls`` may have."""
    return [key_of(f) for f in read_fields(cls)]


# --- checks: value -> a problem, or None ------------------------------------------------------------------

def number(low: float, high: float, *, whole: bool = False, low_open: bool = False,
           unit: str = "") -> Callable[[Any], str | None]:
    """A finite number in [low, high] (``low_open``: (low, high]); ``whole``: an integer's value."""
    from ..values import number_problem

    def check(value: Any) -> str | None:
        return number_problem(value, low, high, whole=whole, low_open=low_open, unit=unit)
    check.bounds = (low, high, whole, low_open)  # type: ignore[attr-defined]  # the JSON Schema's minimum/maximum
    return check


def between(low: int, high: int, what: str = "") -> Callable[[Any], str | None]:
    """An integer in [low, high]: ``must be low-high`` (``what`` said after it, in brackets)."""
    def check(value: Any) -> str | None:
        return None if low <= value <= high else f"must be {low}-{high}" + (f" ({what})" if what else "")
    check.bounds = (low, high, True, False)  # type: ignore[attr-defined]
    return check


def each(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """A list's check of each item: ``item i 'value': problem``."""
    def check_each(values: Any) -> str | None:
        for i, value in enumerate(values):
            if (problem := check(value)):
                return f"item {i} {value!r}: {problem}"
        return None
    return check_each


def one_of(allowed: Iterable[Any], problem: Callable[[Any], str]) -> Callable[[Any], str | None]:
    """A choice among ``allowed`` (the JSON Schema's enum), refused with the field's own words
    (``problem(value)``) where they say more than ``setting(choices=...)``'s."""
    allowed = tuple(allowed)

    def check(value: Any) -> str | None:
        return None if value in allowed else problem(value)
    check.choices = allowed  # type: ignore[attr-defined]
    return check


def all_of(*checks: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """The first problem any of ``checks`` finds."""
    def check(value: Any) -> str | None:
        return next((p for c in checks if (p := c(value))), None)
    check.bounds = next((c.bounds for c in checks if hasattr(c, "bounds")), None)  # type: ignore[attr-defined]
    return check


# --- parses: the file's value -> the field's ----------------------------------------------------------------

def whole(low: int, high: int, *, unit: str = "") -> Callable[[Any], int]:
    """A whole number in [low, high], given as an integer or a float of one (``2.0``), as an int."""
    from ..values import number_problem

    def parse(value: Any) -> int:
        if (problem := number_problem(value, low, high, whole=True, unit=unit)):
            raise Invalid(problem)
        return int(value)
    parse.schema = {"type": "integer", "minimum": low, "maximum": high}  # type: ignore[attr-defined]
    return parse


def seconds(high: float) -> Callable[[Any], float]:
    """Seconds, > 0 and <= ``high``, as a float."""
    def parse(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= high:
            raise Invalid(f"{value!r}: expected seconds, > 0 and <= {high:g}")
        return float(value)
    parse.schema = {"type": "number", "exclusiveMinimum": 0, "maximum": high}  # type: ignore[attr-defined]
    return parse


def regex_problem(value: str) -> str | None:
    """Why ``value`` is not a regular expression (Python's) farm may run on a console line, or None: one that
    does not compile, or one that can backtrack catastrophically (:func:`backtracking_problem`)."""
    import re

    try:
        re.compile(value)
    except re.error as exc:
        return f"{value!r} is not a regular expression: {exc}"
    return backtracking_problem(value)


#: a bounded repetition of more than this many is as good as unbounded for backtracking
_MANY = 64


def backtracking_problem(value: str) -> str | None:
    """Why the regex ``value`` (it compiles) can take exponential time on a line that almost matches, or None.

    A pipeline's patterns (``system.ready``, ``fatal``, ``address``, ``stats``) are searched in console
    lines, by farm and by pexpect, with Python's backtracking ``re``, which no timeout can interrupt: one
    line of 40 ``a`` s against ``^(a+)+$`` kept the console busy for more than 20 s (fatal lines, timeouts and
    SIGTERM waiting behind it). So the two shapes that make backtracking exponential are refused when the
    file is read: a repetition inside an unbounded repetition (``(a+)+``, ``(\\w+\\s?)*``, ``(a{1,5})+``)
    and an alternation of several characters inside one (``(?:ab|a)+``; one character each is a set, and
    safe). A possessive repetition or an atomic group (``++``, ``(?>...)``) gives nothing back, so its inside
    is not looked at. Polynomial shapes (``\\d*\\d*x``) are not refused: they slow a long line, they do
    not stop the console.

    Why a check and not a linear-time engine (google-re2, or the ``regex`` module's timeout): the ready
    and fatal lines are waited for by labgrid's console (pexpect), which takes only Python's compiled
    patterns, so another engine in farm's own matching would leave the same patterns unbounded there.
    The check reads the pattern with Python's own parser (``re._parser``: the tree ``re.compile`` builds
    from), so what it judges is exactly what runs; no kept library judges Python's patterns
    (regexploit's last release was 2021)."""
    import re._constants as c
    import re._parser as parser

    def walk(items, repeated: bool) -> str | None:
        for op, av in items:
            if op in (c.MAX_REPEAT, c.MIN_REPEAT):
                low, high, inner = av
                if repeated and high > 1:
                    return "a repetition inside an unbounded repetition"
                found = walk(inner, repeated or high == c.MAXREPEAT or high > _MANY)
            elif op is c.POSSESSIVE_REPEAT:
                found = walk(av[2], False)
            elif op is c.ATOMIC_GROUP:
                found = walk(av, False)
            elif op is c.SUBPATTERN:
                found = walk(av[-1], repeated)
            elif op is c.BRANCH:
                if repeated:
                    return "an alternation inside an unbounded repetition"
                found = next((f for branch in av[1] if (f := walk(branch, repeated))), None)
            elif op in (c.ASSERT, c.ASSERT_NOT):
                found = walk(av[1], repeated)
            elif op is c.GROUPREF_EXISTS:
                found = walk(av[1], repeated) or (walk(av[2], repeated) if av[2] else None)
            else:
                continue
            if found:
                return found
        return None

    found = walk(parser.parse(value), False)
    if found is None:
        return None
    return (f"{value!r}: {found} can backtrack for minutes on one console line that almost matches (e.g. "
            "(a+)+ on a line of 40 a's); write it without nesting (a+ for (a+)+, [ab]+ for (a|b)+) or make the "
            "inner part possessive (a++)")
