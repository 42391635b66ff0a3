"""A benchmark's parameters, typed: one attrs class per benchmark, from which everything derives.

    @attrs.frozen(kw_only=True)
    class FrobParams(Params):
        rounds: int = param(1, kind=int, run_length=True, check=at_least(1), doc="how often it frobs")
        flavour: str = param("plain", kind=str, identity=True, check=one_of("plain", "spicy"))

A field is declared once, with its default, the YAML type the pipeline file may give (``kind``), its
check (raising :class:`~farm.errors.JobError` with the problem), and what it is to a record:

* ``identity``: it changes *what* is measured (a method, a protocol, a packet size): records that
  carry it are keyed by it (farm.results.identity.MetricKey);
* ``run_length``: it says how long or how much was measured (a duration, a sample count, a warm-up):
  never part of a record's key, so runs of other lengths join;
* ``methods``: the methods (the ``method`` field's values) it is a parameter of; others refuse it;
* ``by_method``: its default under some methods, where it differs from ``default`` (the sweep's
  ``warmup`` is 1 s, but 10 s, ipbench's, under method ``ipbench``). Not given, the field takes the
  default of the object's ``method``; given, it is what was given (the same value too).

Each field is a :func:`farm.schema.setting`: the pipeline file's check (:func:`Params.of`, before
anything is built, through farm.schema.read like every file farm reads; :meth:`Params.check` for the
checks across fields), its JSON Schema (``farm schema pipeline``), the run (it gets the typed object:
``params.duration``, never ``params.get("duration", 5)``) and the record key all read this one declaration.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, TypeVar

import attrs

from ..boot.target import ShellTarget
from ..errors import JobError
from ..schema import KIND_NAMES, Invalid, WrongType, setting

META = "farm"
P = TypeVar("P", bound="Params")


@attrs.frozen
class ParamInfo:
    kind: type | tuple[type, ...]
    identity: bool = False
    run_length: bool = False
    methods: tuple[str, ...] | None = None  # None: a parameter of every method
    doc: str = ""
    #: the default of each method whose default differs from ``default`` (see :func:`param`)
    by_method: tuple[tuple[str, Any], ...] = ()
    default: Any = None  # the field's default when ``by_method`` is given (its attrs default is None then)

    def default_for(self, method: str | None) -> Any:
        return dict(self.by_method).get(method, self.default) if self.by_method else self.default


def param(default: Any, *, kind: type | tuple[type, ...], identity: bool = False, run_length: bool = False,
          methods: tuple[str, ...] | None = None, by_method: Mapping[str, Any] | None = None,
          check: Callable[[str, Any], None] | None = None, doc: str = "") -> Any:
    """A parameter field (see the module docstring): a :func:`farm.schema.setting` read as ``kind``;
    ``check(name, value)`` raises JobError, ``name`` the benchmark's and the field's (``sweep loads``). With
    ``by_method`` the attrs default is None (not given), and the object takes its method's default when it
    is made (:meth:`Params.__attrs_post_init__`)."""
    info = ParamInfo(kind, identity, run_length, methods, doc, tuple((by_method or {}).items()), default)
    return setting(None if by_method else default, doc=doc, parse=_of_kind(kind), named_check=check,
                   metadata={META: info}, converter=_frozen)


def _of_kind(kind: type | tuple[type, ...]) -> Callable[[Any], Any]:
    """The pipeline file's value, if it is of the YAML type ``kind`` (true is no number), as it was given."""
    kinds = kind if isinstance(kind, tuple) else (kind,)

    def parse(value: Any) -> Any:
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            raise WrongType(" or ".join(dict.fromkeys(KIND_NAMES.get(k, k.__name__) for k in kinds)), value)
        return value
    return parse


def _frozen(value: Any) -> Any:
    """A list of the pipeline file as a tuple (the parameters are frozen); anything else as it is."""
    return tuple(value) if isinstance(value, list) else value


@attrs.frozen(kw_only=True)
class Params:
    """A benchmark's parameters (subclass it with :func:`param` fields, ``@attrs.frozen(kw_only=True)``)."""

    #: how messages name the benchmark's parameters ("sweep", "isal")
    LABEL = "benchmark"

    def __attrs_post_init__(self) -> None:
        """A ``by_method`` field not given takes the default of this object's ``method``."""
        method = getattr(self, "method", None)
        for name, i in self.info().items():
            if i.by_method and getattr(self, name) is None:
                object.__setattr__(self, name, _frozen(i.default_for(method)))  # frozen: attrs' own way

    @classmethod
    def info(cls) -> dict[str, ParamInfo]:
        return {f.name: f.metadata[META] for f in attrs.fields(cls) if META in f.metadata}

    @classmethod
    def kinds(cls) -> dict[str, type | tuple[type, ...]]:
        """Field -> the YAML types the pipeline file may give it (checked with file:line: field)."""
        return {name: i.kind for name, i in cls.info().items()}

    @classmethod
    def run_length(cls) -> frozenset[str]:
        """The fields that say how long or how much was measured: never part of a record's key."""
        return frozenset(name for name, i in cls.info().items() if i.run_length)

    @classmethod
    def identity(cls) -> frozenset[str]:
        return frozenset(name for name, i in cls.info().items() if i.identity)

    @classmethod
    def of(cls: type[P], given: Mapping[str, Any]) -> P:
        """The parameters a pipeline file (a :class:`~farm.config.Node` of it) or a caller gave, read as the
        pipeline file's are (farm.schema.read): an unknown name, a value its field refuses or one of another
        method is a JobError saying which (with the file, line and field of a Node)."""
        from ..schema.read import structure

        return structure(given, cls)

    def validate(self, given: Mapping[str, Any]) -> None:
        """After each field's own check (farm.schema): a field of another method is refused, then the
        checks across fields (:meth:`check`)."""
        info = self.info()
        if "method" in info:
            taking = {name for name, i in info.items() if i.methods is None or self.method in i.methods}
            if (other := sorted(set(given) - taking)):
                raise Invalid(f"{self.LABEL} method {self.method}: {', '.join(other)} not a parameter of this "
                              f"method (it takes {', '.join(sorted(taking))})")
        try:
            self.check()
        except JobError as exc:
            raise Invalid(str(exc)) from None

    def check(self) -> None:
        """Checks across fields, after each field's own (a subclass's; raise JobError)."""

    def needs(self) -> "Needs":
        """What the benchmark needs on the target with these parameters (farm.images.needs)."""
        from ..images.needs import Needs

        return Needs()

    def ports(self) -> tuple[int, ...]:
        """The target's ports these parameters chose (an echo server's), reached from the lab host besides
        the registration's fixed ones (farm.bench.registry.BenchmarkSpec.ports_for): forwarded into a guest."""
        return ()

    def requires(self) -> tuple[type, ...]:
        """What the benchmark asks of the booted target with these parameters: protocols of
        farm.boot.target (by default a shell, ``ShellTarget``). A setup whose flow does not give them all
        (farm.flows.FlowType.gives: a system image's flow has no shell) is refused the benchmark when the
        pipeline file is read; the run reaches them through ``ctx.shell_target``, ``ctx.served_target``
        and ``ctx.console_target``."""
        return (ShellTarget,)

    def default_of(self, name: str) -> Any:
        """Field ``name``'s default for this object's method."""
        info = self.info().get(name)
        if info is not None and info.by_method:
            return info.default_for(getattr(self, "method", None))
        return attrs.fields_dict(type(self))[name].default

    def given(self) -> dict[str, Any]:
        """The fields that differ from their defaults (their method's)."""
        return {k: v for k, v in attrs.asdict(self, recurse=False).items() if v != self.default_of(k)}


@attrs.frozen(kw_only=True)
class NoParams(Params):
    """A benchmark without parameters."""


# --- checks: (name, value) -> None, or JobError ------------------------------------------------------

def one_of(*allowed: Any) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value not in allowed:
            raise JobError(f"{name} {value!r}: expected one of {', '.join(map(str, allowed))}")
    check.choices = allowed  # type: ignore[attr-defined]  # the JSON Schema's enum
    return check


def a_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise JobError(f"{name} {value!r}: expected true or false")


def a_port(name: str, value: Any) -> None:
    """A TCP or UDP port number, 1-65535."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise JobError(f"{name} {value!r}: expected a port number 1-65535")


def number_in(low: float, high: float, *, whole: bool = False, low_open: bool = False,
              unit: str = "") -> Callable[[str, Any], None]:
    from ..values import number_problem

    def check(name: str, value: Any) -> None:
        if (problem := number_problem(value, low, high, whole=whole, low_open=low_open, unit=unit)):
            raise JobError(f"{name}: {problem}")
    return check
