"""Immutable records: the behaviour of frozen dataclasses, without their start-up cost.

``dataclasses`` writes and compiles source code for every class it decorates; across
decodecalc's records that was two thirds of a query's own start-up time, paid by every
process in a shell loop. ``@record`` builds the same __init__, __eq__, __hash__ and
__repr__ from generic functions over the class's field list instead. Type checkers see
it as a dataclass (``dataclass_transform``), so fields, defaults and keywords are checked
the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Callable[[Any], Any]:
        return lambda decorator: decorator


T = TypeVar("T")
_MISSING = object()


class FrozenError(AttributeError):
    """A record's fields are set once, at construction."""


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], T]) -> T:
    """A default built anew for each record, as in dataclasses."""
    return _Factory(default_factory)  # type: ignore[return-value]


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    """A record's __init__: the values given (keywords, the usual way, are taken as they
    come), its defaults for the rest, stored in field order. A query builds hundreds of
    records, so the common case is a few dictionary operations, not a loop per field."""
    cls = type(self)
    names: tuple[str, ...] = cls.__record_fields__
    if args or not cls.__record_names__.issuperset(kwargs):
        kwargs = _given(cls, args, kwargs)
    values = cls.__record_template__.copy()  # field order; the plain defaults in place
    values.update(kwargs)
    if len(kwargs) != len(names):
        for name in cls.__record_unfilled__:
            if name not in kwargs:
                default = values[name]
                if default is _MISSING:
                    raise TypeError(f"{cls.__name__} is missing field {name!r}")
                values[name] = default.make()
    self.__dict__.update(values)
    post_init = getattr(self, "__post_init__", None)
    if post_init is not None:
        post_init()


def _given(cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The values of positional and keyword arguments by field, each checked."""
    names: tuple[str, ...] = cls.__record_fields__
    if len(args) > len(names):
        raise TypeError(f"{cls.__name__} takes {len(names)} fields, got {len(args)} positional")
    values = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key not in cls.__record_names__:
            raise TypeError(f"{cls.__name__} has no field {key!r}")
        if key in values:
            raise TypeError(f"{cls.__name__} got {key!r} twice")
        values[key] = value
    return values


def _values(self: Any) -> tuple[Any, ...]:
    values: tuple[Any, ...] = type(self).__record_values__(self)
    return values


def _eq(self: Any, other: object) -> Any:
    if type(other) is not type(self):
        return NotImplemented
    return bool(_values(self) == _values(other))


def _hash(self: Any) -> int:
    return hash(_values(self))


def _repr(self: Any) -> str:
    fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in type(self).__record_fields__)
    return f"{type(self).__name__}({fields})"


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenError(f"cannot assign to field {name!r} of a {type(self).__name__}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenError(f"cannot delete field {name!r} of a {type(self).__name__}")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[T]) -> type[T]:
    """Make a class with annotated fields an immutable record."""
    namespace = cls.__dict__  # (read once: every ``cls.__dict__`` builds a new view)
    annotations = namespace.get("__annotations__")
    if not isinstance(annotations, dict):  # annotations evaluated lazily (PEP 649)
        import inspect  # already loaded by Typer

        annotations = inspect.get_annotations(cls)
    names = tuple(annotations)
    defaults = {n: namespace[n] for n in names if n in namespace}
    for name in defaults:
        delattr(cls, name)  # defaults live on the record's own table, not as class attributes
    # What _init starts from: each field's plain default, _MISSING or a _Factory for the
    # rest (__record_unfilled__ names those).
    template = dict.fromkeys(names, _MISSING)
    template.update(defaults)
    methods = {
        "__record_fields__": names,
        "__record_defaults__": defaults,
        "__record_names__": frozenset(names),
        "__record_template__": template,
        "__record_unfilled__": tuple(
            n for n, d in template.items() if d is _MISSING or isinstance(d, _Factory)
        ),
        "__record_values__": _getter(names),
        "__init__": _init,
        "__eq__": _eq,
        "__hash__": _hash,
        "__repr__": _repr,
        "__setattr__": _frozen_setattr,
        "__delattr__": _frozen_delattr,
    }
    for name, value in methods.items():
        setattr(cls, name, value)
    return cls


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The fields' values as a tuple, read in C (operator.attrgetter gives a tuple for two
    names or more, the value itself for one)."""
    import operator

    if len(names) > 1:
        return operator.attrgetter(*names)
    return lambda obj: tuple(getattr(obj, name) for name in names)


def replace(obj: T, **changes: Any) -> T:
    """A copy of a record with some fields changed (validated again, like a new one)."""
    values = dict(zip(type(obj).__record_fields__, _values(obj), strict=True))  # type: ignore[attr-defined]
    values.update(changes)
    return type(obj)(**values)


def field_names(cls: type[Any]) -> tuple[str, ...]:
    names: tuple[str, ...] = cls.__record_fields__
    return names


def field_defaults(cls: type[Any]) -> dict[str, Any]:
    """The fields that have a default, with it: where options declared from a record read
    their defaults, so they are declared once."""
    return dict(cls.__record_defaults__)
