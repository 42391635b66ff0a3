"""Reading a file into its declared class (farm.schema): :func:`structure`, through one cattrs Converter.

cattrs builds each attrs class from its mapping (``forbid_extra_keys``: an unknown key is refused;
``detailed_validation``: each problem carries the path of the field it is about); the hooks here make
every scalar strict (``"3"`` is no integer, ``true`` no number: YAML's types are the file's words), run
each field's ``parse``, ``choices`` and ``check`` as it is read, then the class's ``validate`` across its
fields. Every problem becomes one :class:`~farm.errors.JobError`, ``file:line: field.path: problem``,
from the path cattrs noted and the lines farm.config's :class:`~farm.config.Node` kept; an unknown key
names the allowed ones and the nearest ("did you mean 'duration'?").

Why cattrs, not pydantic: farm is attrs throughout (as labgrid), and cattrs imports in about half
pydantic's time; it is imported here, when a file is read, never by a module that only declares a class.
"""

from __future__ import annotations

from contextvars import ContextVar
import functools
import types
import typing
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, TypeVar, Union

import attrs
import cattrs
from cattrs.errors import (AttributeValidationNote, ClassValidationError, ForbiddenExtraKeysError,
                           IterableValidationError, IterableValidationNote)
from cattrs.gen import make_dict_structure_fn, override

from ..errors import JobError
from . import KIND_NAMES, Invalid, Missing, Unknown, WrongType, got, key_of, keys, setting_of

T = TypeVar("T")

def kind_name(tp: Any) -> str:
    """What a value of type ``tp`` is, in a problem's words."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(dict.fromkeys(kind_name(a) for a in typing.get_args(tp) if a is not type(None)))
    if origin is Literal:
        return "one of " + ", ".join(map(str, typing.get_args(tp)))
    if origin in (list, tuple, set, frozenset):
        return "a list"
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        return "a mapping"
    if attrs.has(tp) if isinstance(tp, type) else False:
        return getattr(tp, "SHAPE", "a mapping")
    return KIND_NAMES.get(tp, getattr(tp, "__name__", str(tp)))


# --- the converter ------------------------------------------------------------------------------------------

def _scalar(tp: type, accept: Callable[[Any], bool], convert: Callable[[Any], Any] = lambda v: v):
    def hook(value: Any, _: Any) -> Any:
        if not accept(value):
            raise WrongType(kind_name(tp), value)
        return convert(value)
    return hook


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer of hundreds of digits
        raise Invalid("a number out of range") from None


def _literal(value: Any, tp: Any) -> Any:
    allowed = typing.get_args(tp)
    if isinstance(value, bool) or value not in allowed:
        raise Invalid(f"{value!r}: expected one of {', '.join(map(str, allowed))}")
    return value


def _fits(value: Any, tp: Any) -> bool:
    """Whether ``value``'s YAML type is one ``tp`` reads (a union's member is chosen by it)."""
    origin = typing.get_origin(tp)
    if tp is Any or (isinstance(tp, type) and hasattr(tp, "__structure__")):  # it says what it reads
        return True
    if isinstance(value, bool):
        return tp is bool
    if _is_int(value):
        return tp in (int, float)
    if isinstance(value, float):
        return tp is float
    if isinstance(value, str):
        return tp in (str, Path) or origin is Literal
    if isinstance(value, (list, tuple)):
        return origin in (list, tuple, set, frozenset) or tp in (list, tuple)
    if isinstance(value, Mapping):
        return origin in (dict, Mapping) or tp in (dict, Mapping) or (isinstance(tp, type) and attrs.has(tp))
    return value is None and tp is type(None)


def _union(value: Any, tp: Any) -> Any:
    members = typing.get_args(tp)
    if value is None and type(None) in members:
        return None
    fitting = [m for m in members if _fits(value, m)]
    if _is_int(value) and int in fitting:
        fitting = [int]  # 3 is an integer where both are allowed (a float where only that is)
    if not fitting:
        raise WrongType(kind_name(tp), value)
    return CONVERTER().structure(value, fitting[0])


def _sequence(value: Any, tp: Any) -> Any:
    if not isinstance(value, (list, tuple)):
        raise WrongType("a list", value)
    args = typing.get_args(tp)
    item = args[0] if args else Any
    origin = typing.get_origin(tp) or tp
    items, errors = [], []
    for i, element in enumerate(value):
        try:
            items.append(CONVERTER().structure(element, item))
        except Exception as exc:  # noqa: BLE001 - each item's problem, named by its index
            exc.__notes__ = [*getattr(exc, "__notes__", []), IterableValidationNote(f"item {i}", i, item)]
            errors.append(exc)
    if errors:
        raise IterableValidationError(f"While reading {tp}", errors, tp)
    return tuple(items) if origin is tuple else items


def _mapping(value: Any, tp: Any) -> Any:
    if not isinstance(value, Mapping):
        raise WrongType("a mapping", value)
    key_type, value_type = (typing.get_args(tp) or (Any, Any))
    result, errors = {}, []
    for key, element in value.items():
        try:
            if typing.get_origin(key_type) is Literal and key not in typing.get_args(key_type):
                raise Unknown(str(key), [str(k) for k in typing.get_args(key_type)])
            result[key] = CONVERTER().structure(element, value_type)
        except Exception as exc:  # noqa: BLE001 - each key's problem, named by the key
            exc.__notes__ = [*getattr(exc, "__notes__", []), IterableValidationNote(str(key), str(key), value_type)]
            errors.append(exc)
    if errors:
        raise IterableValidationError(f"While reading {tp}", errors, tp)
    return result


def _field_hook(cls: type, field: attrs.Attribute) -> Callable[[Any, Any], Any]:
    info = setting_of(field)
    label = f"{getattr(cls, 'LABEL', cls.__name__)} {field.name}"

    def hook(value: Any, _: Any) -> Any:
        try:
            try:
                result = info.parse(value) if info.parse is not None else CONVERTER().structure(value, field.type)
            except Invalid as exc:  # a refused choice (Literal) is told the field's hint
                if info.hint and not isinstance(exc, WrongType) and exc.key is None:
                    raise Invalid(f"{exc.problem} ({info.hint})") from None
                raise
            if info.choices is not None and result not in info.choices:
                raise Invalid(f"{value!r}: expected one of {', '.join(map(str, info.choices))}"
                              + (f" ({info.hint})" if info.hint else ""))
            if info.check is not None and (problem := info.check(result)):
                raise Invalid(problem)
            if info.named_check is not None:
                info.named_check(label, result)
        except JobError as exc:  # a check farm shares with its command-line arguments
            raise Invalid(str(exc)) from None
        return result
    return hook


def _class_hook(cls: type) -> Callable[[Any, Any], Any]:
    attrs.resolve_types(cls)
    overrides = {}
    for field in attrs.fields(cls):
        if not field.init:
            continue
        info = setting_of(field)
        overrides[field.name] = (override(omit=True) if not info.read else
                                 override(rename=key_of(field), struct_hook=_field_hook(cls, field)))
    generated = make_dict_structure_fn(cls, CONVERTER(), _cattrs_forbid_extra_keys=True,
                                       _cattrs_detailed_validation=True, **overrides)
    relative = [key_of(f) for f in attrs.fields(cls) if setting_of(f).relative]
    located = {f.name: setting_of(f).where_of for f in attrs.fields(cls) if setting_of(f).where_of}
    allowed = keys(cls)
    open_keys = getattr(cls, "OPEN", None) is not None

    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, Mapping):
            raise WrongType(getattr(cls, "SHAPE", "a mapping"), value, shape=True)
        given = {k: v for k, v in value.items() if v is not None}  # null: not given (its default)
        if open_keys:  # the other keys are another reader's (labgrid's): not farm's to refuse
            given = {k: v for k, v in given.items() if k in allowed}
        # validate() is given the mapping as the file has it (a Node: its file, its lines)
        if relative:  # as the file gives them: relative to its folder
            base = Path(getattr(value, "file", _FILE.get())).parent
            given.update({k: str(base / Path(given[k]).expanduser()) for k in relative
                          if isinstance(given.get(k), str)})
        try:
            made = generated(given, cls)
        except ClassValidationError as exc:
            raise exc.derive([_unknown(e, allowed, cls) if isinstance(e, ForbiddenExtraKeysError) else e
                              for e in exc.exceptions]) from None
        if located and hasattr(value, "where"):
            made = attrs.evolve(made, **{name: value.where(key) for name, key in located.items() if key in value})
        validate = getattr(made, "validate", None)
        if validate is not None:
            validate(value)
        return made
    return hook


def _unknown(exc: ForbiddenExtraKeysError, allowed: list[str], cls: type) -> Exception:
    first = sorted(exc.extra_fields, key=str)[0]
    error = Unknown(str(first), allowed, getattr(cls, "UNKNOWN", None))
    error.__notes__ = [AttributeValidationNote(f"key {first}", str(first), Any)]
    return error


def _custom(value: Any, tp: Any) -> Any:
    return tp.__structure__(value, read_as)


def read_as(value: Any, tp: Any, key: Any = None) -> Any:
    """``value`` read as ``tp`` (for a class's own ``__structure__``); ``key``: where it is in the mapping
    being read (its problems are named by it)."""
    if key is None:
        return CONVERTER().structure(value, tp)
    try:
        return CONVERTER().structure(value, tp)
    except Exception as exc:  # noqa: BLE001 - the path of a problem grows as it leaves each level
        exc.__notes__ = [*getattr(exc, "__notes__", []), AttributeValidationNote(f"key {key}", str(key), tp)]
        raise ClassValidationError(f"While reading {key}", [exc], dict) from None


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _is_sequence(tp: Any) -> bool:
    return (typing.get_origin(tp) or tp) in (list, tuple, set, frozenset)


def _is_mapping(tp: Any) -> bool:
    return (typing.get_origin(tp) or tp) in (dict, Mapping)


@functools.cache
def CONVERTER() -> cattrs.Converter:  # noqa: N802 - the one converter, made once
    """farm's converter (the module docstring), made on first use."""
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    converter.register_structure_hook(str, _scalar(str, lambda v: isinstance(v, str)))
    converter.register_structure_hook(int, _scalar(int, _is_int))
    converter.register_structure_hook(float, _scalar(float, _is_number, _float))
    converter.register_structure_hook(bool, _scalar(bool, lambda v: isinstance(v, bool)))
    converter.register_structure_hook(Path, _scalar(Path, lambda v: isinstance(v, str), Path))
    converter.register_structure_hook(Any, lambda value, _: value)
    converter.register_structure_hook_func(lambda t: typing.get_origin(t) is Literal, _literal)
    converter.register_structure_hook_func(_is_union, _union)
    converter.register_structure_hook_func(_is_sequence, _sequence)
    converter.register_structure_hook_func(_is_mapping, _mapping)
    converter.register_structure_hook_factory(lambda t: isinstance(t, type) and attrs.has(t), _class_hook)
    converter.register_structure_hook_func(lambda t: isinstance(t, type) and hasattr(t, "__structure__"), _custom)
    return converter


# --- from cattrs' errors to one JobError -----------------------------------------------------------------------

#: the file being read (for a mapping made in code, without its own)
_FILE: ContextVar[str] = ContextVar("farm_schema_file", default="?")

def _first(exc: BaseException, path: tuple) -> tuple[tuple, BaseException]:
    """The first problem in ``exc`` (unknown keys before the fields' own: a misspelt key is why a
    required one is missing) and its path."""
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        subs = sorted(exc.exceptions, key=lambda e: not isinstance(e, Unknown))
        sub = subs[0]
        note = next((n for n in getattr(sub, "__notes__", [])
                     if isinstance(n, (AttributeValidationNote, IterableValidationNote))), None)
        if isinstance(note, AttributeValidationNote):
            cls = exc.cl if isinstance(exc, ClassValidationError) else None
            names = {f.name: key_of(f) for f in attrs.fields(cls)} if isinstance(cls, type) and attrs.has(cls) else {}
            return _first(sub, path + (names.get(note.name, note.name),))
        if isinstance(note, IterableValidationNote):
            return _first(sub, path + (note.index,))
        return _first(sub, path)
    return path, exc


def _text(path: tuple) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _message(root: Any, path: tuple, exc: BaseException, label: str = "") -> str:
    """``file:line: field: problem`` for the problem ``exc`` at ``path`` under the mapping ``root``."""
    if isinstance(exc, Invalid) and exc.key is not None:
        path = path + (exc.key if isinstance(exc.key, tuple) else (exc.key,))
    if (isinstance(exc, KeyError) or isinstance(exc, Missing)) and path:  # a required field, missing
        hint = f" ({exc.problem})" if isinstance(exc, Missing) and exc.problem else ""
        exc = Invalid(f"missing required field '{_text(_prefixed(root, path))}'{hint}")
        path = path[:-1]
    problem = exc.problem if isinstance(exc, Invalid) else str(exc)
    if path and isinstance(path[-1], int):  # an item of a list: the list's line, "item i ..."
        holder = _walk(root, path[:-1])
        item = holder[path[-1]] if isinstance(holder, list) and path[-1] < len(holder) else None
        if not hasattr(item, "key_lines"):
            if isinstance(exc, WrongType):
                problem = f"item {path[-1]} must be {exc.expected}" + ("" if exc.shape else f", got {got(exc.value)}")
            else:
                problem = f"item {path[-1]} {item!r}: {problem}"
            path = path[:-1]
    where = _where(root, path, label)
    return f"{where}: {problem}" if where else problem


def _prefixed(root: Any, path: tuple) -> tuple:
    prefix = getattr(root, "path", "")
    return ((prefix,) if prefix else ()) + path


def _walk(root: Any, path: tuple) -> Any:
    node = root
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _where(root: Any, path: tuple, label: str = "") -> str:
    """``file:line: field`` of ``path``: the line of its key in the deepest mapping that has it (a mapping
    made in code, not read from a file: ``label field``, as a benchmark's params are named: ``isal only``)."""
    field = _text(_prefixed(root, path)) or "(top level)"
    file = getattr(root, "file", None)
    if file is None:
        return f"{label} {_text(path)}".strip() if path else ""
    line = getattr(root, "line", 0)
    node = root
    for part in path:
        lines = getattr(node, "key_lines", None)
        if isinstance(part, str) and lines is not None and part in lines:
            line = lines[part]
        elif isinstance(part, int) and isinstance(node, list) and part < len(node):
            line = getattr(node[part], "line", line)
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
    return f"{file}:{line}: {field}" if line else f"{file}: {field}"  # JSON keeps no lines


def structure(node: Mapping[str, Any], cls: type[T]) -> T:
    """``node`` (a mapping of a file farm.config loaded, or one made in code) read as ``cls``: every
    value checked; a problem is a JobError ``file:line: field.path: problem`` (module docstring)."""
    token = _FILE.set(getattr(node, "file", "?"))
    try:
        return CONVERTER().structure(node, cls)
    except (ClassValidationError, IterableValidationError, Invalid, KeyError) as exc:
        path, problem = _first(exc, ())
        raise JobError(_message(node, path, problem, getattr(cls, "LABEL", ""))) from None
    finally:
        _FILE.reset(token)
