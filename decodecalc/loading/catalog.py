"""Where presets live and how a name becomes a preset.

Built-in presets ship inside the package (``decodecalc/presets`` in a wheel); in a source
checkout they are the repository's top-level ``presets/``. User directories, from
``--presets`` or the DECODECALC_PRESETS variable, come first and may add or override.
Files are loaded on demand: a query reads the few files it names, not the whole catalog.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from decodecalc.errors import InputError, InputErrors, PresetError
from decodecalc.loading import cache
from decodecalc.loading.datafile import (
    Document,
    folder_config,
    fragment,
    is_dir,
    is_file,
    read_yaml,
)
from decodecalc.loading.fields import suggest
from decodecalc.loading.presets import LOADERS, config_model_id, model_from_config, preset_id_of
from decodecalc.model.dtypes import DType
from decodecalc.model.hardware import GpuSpec, Link
from decodecalc.model.model import Model
from decodecalc.model.precision import WeightRecipe
from decodecalc.notes import Note
from decodecalc.paths import expand_user
from decodecalc.record import field, record, replace
from decodecalc.scenarios.rates import PriceList

if TYPE_CHECKING:
    from decodecalc.engine.profile import EngineProfile

ENV_VAR = "DECODECALC_PRESETS"
KINDS = {
    "models": "model",
    "gpus": "GPU",
    "dtypes": "dtype",
    "links": "link",
    "engines": "engine",
    "recipes": "weight recipe",
    "prices": "price list",
}


def _is_safe_stem(name: str) -> bool:
    """A name that can only be a file name in the presets directory (no path, no dots first)."""
    return name[:1].isalnum() and name.isascii() and all(c.isalnum() or c in "._-" for c in name)


class Preset(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def aliases(self) -> tuple[str, ...]: ...


T = TypeVar("T")
P = TypeVar("P", bound=Preset)


@functools.cache
def presets_dir() -> Path:
    """The built-in presets: inside the installed package, else the source checkout's.
    Found once per process: resolving the package's path takes a system call per folder
    above it, and a query asks a dozen times (each listing, each shipped preset's key)."""
    package = Path(__file__).resolve().parent.parent
    installed = package / "presets"
    return installed if installed.is_dir() else package.parent / "presets"


def user_dirs(extra: Sequence[str | Path] = ()) -> tuple[Path, ...]:
    from_env = [p for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
    return tuple(expand_user(p) for p in [*extra, *from_env])


def outside_link(path: Path) -> str:
    """Words naming a preset file that is a link out of its presets folder ("" for any
    other), added to its problems: a file there that is not a preset at all may be one
    linked in by mistake, or by someone else."""
    folder = path.parent.parent
    try:
        if not path.is_symlink():
            return ""
        target = path.resolve()
        if target.is_relative_to(folder.resolve()):
            return ""
    except (OSError, RuntimeError):  # a loop of links
        return f" ({path.name} is a link that cannot be followed)"
    return f" ({path.name} is a link to {target}, outside the presets folder {folder})"


def is_numbers(text: str) -> bool:
    """A model or GPU spec of ``key=value`` pairs (loading/numbers.py): no preset name,
    alias or Hub id has '='. Tested here so a preset query never imports the numbers reader."""
    return "=" in text


@record
class Catalog:
    """Preset lookup over user directories (first) and the built-in presets."""

    dirs: tuple[Path, ...] = field(default_factory=lambda: (*user_dirs(), presets_dir()))
    _cache: dict[Path, Any] = field(default_factory=dict)
    _listed: dict[str, tuple[Path, ...]] = field(default_factory=dict)
    """The files of each kind, listed once: resolving a sweep's every scenario asks for all
    engine profiles (the typical band) again and again."""
    _named: dict[tuple[str, str], Any] = field(default_factory=dict)
    """The preset each (kind, name) found: a sweep names the same few for every scenario,
    and each search tries files on disk (an alias, every file of its kind)."""
    _checked: set[str] = field(default_factory=set)
    """The kinds whose files in the user's directories have all been read (_read_yours)."""

    @classmethod
    def with_user_dirs(cls, extra: Sequence[str | Path] = ()) -> Catalog:
        """The catalog a command uses. Every directory named must exist: a typo would
        otherwise fall back to the built-in presets without a word."""
        for d in extra:
            if not is_dir(expand_user(d)):
                raise InputError(f"presets directory {str(d)!r} does not exist")
        for d in user_dirs():  # with no arguments: the directories in the variable
            if not is_dir(d):
                raise InputError(f"presets directory {str(d)!r} (from ${ENV_VAR}) does not exist")
        return cls((*user_dirs(extra), presets_dir()))

    def model(self, name: str) -> Model:
        """A model by preset name or alias, from a preset file, from a config.json, from
        numbers (``layers=80,hidden=8192,...``, loading/numbers.py) or, for an ``org/name``
        that is none of these, from the Hugging Face Hub (loading/hub.py). A local model
        folder (a checkpoint, as vLLM takes one) is read from its config.json."""
        path = expand_user(name)
        if is_dir(path) and (os.sep in name or not self._lookup("models", name, Model)[0]):
            path = folder_config(path, name)
            name = str(path)
        if is_numbers(name) and not is_file(path):
            from decodecalc.loading.numbers import model_from_numbers

            return model_from_numbers(name)
        if name.endswith((".yaml", ".yml", ".json")) or (os.sep in name and is_file(path)):
            if not is_file(path):
                raise InputError(f"model file {name!r} does not exist")
            if path.suffix == ".json":
                from decodecalc.loading.quantization import read_config

                config = read_config(path)
                return model_from_config(config, config_model_id(path))
            return self._load_file("models", path, Model)
        found, names = self._lookup("models", name, Model)
        if found is not None:
            return found
        from decodecalc.loading import hub

        if hub.is_repo_id(name):
            return hub.model_from_hub(name.strip(), suggest(name.strip().lower(), names))
        raise self._unknown("models", name, names)

    def gpu(self, name: str) -> GpuSpec:
        """A GPU by preset name or alias, or from numbers (``bandwidth=3.35TB/s,...``)."""
        if not is_numbers(name):
            return self._find("gpus", name, GpuSpec)
        from decodecalc.loading.numbers import gpu_from_numbers, gpu_with_overrides, without_family

        base, _, overrides = name.partition(",")
        if "=" not in base:  # a preset with its memory or bandwidth given: strix-halo,memory=64GiB
            return gpu_with_overrides(self._find("gpus", base.strip(), GpuSpec), overrides)
        gpu = gpu_from_numbers(name)
        if gpu.link is not None:
            self.link(gpu.link)  # a misspelt link is refused now, not at the first TP > 1
        if not gpu.family:  # name the profiles it falls back to
            profiles = sorted({p.id for p in self.engines()})
            gpu = replace(gpu, notes=gpu.notes + without_family(profiles))
        return gpu

    def dtype(self, name: str) -> DType:
        return self._find("dtypes", name, DType)

    def recipe(self, name: str) -> WeightRecipe:
        return self._find("recipes", name, WeightRecipe)

    def recipes(self) -> list[WeightRecipe]:
        return self._all("recipes", WeightRecipe)

    def weights(self, name: str) -> DType | WeightRecipe:
        """What --weights names: a dtype (every tensor in it) or a weight recipe (formats
        per tensor group). No recipe spells like a dtype, so the order does not matter."""
        dtype, dtype_names = self._lookup("dtypes", name, DType)
        if dtype is not None:
            return dtype
        recipe, recipe_names = self._lookup("recipes", name, WeightRecipe)
        if recipe is not None:
            return recipe
        hint = suggest(name.strip().lower(), {**dtype_names, **recipe_names})
        raise InputError(
            f"unknown dtype or weight recipe {name!r}{hint} "
            "('decodecalc dtypes' and 'decodecalc recipes' list them)"
        )

    def link(self, name: str) -> Link:
        return self._find("links", name, Link)

    def links(self) -> list[Link]:
        return self._all("links", Link)

    def engine(self, name: str) -> EngineProfile:
        from decodecalc.engine.profile import EngineProfile

        return self._find("engines", name, EngineProfile)

    def engines(self) -> list[EngineProfile]:
        from decodecalc.engine.profile import EngineProfile

        return self._all("engines", EngineProfile)

    def price_list(self, name: str) -> PriceList:
        return self._find("prices", name, PriceList)

    def price_lists(self) -> list[PriceList]:
        return self._all("prices", PriceList)

    def models(self) -> list[Model]:
        return self._all("models", Model)

    def gpus(self) -> list[GpuSpec]:
        return self._all("gpus", GpuSpec)

    def dtypes(self) -> list[DType]:
        return self._all("dtypes", DType)

    def ids(self, kind: str) -> list[str]:
        """Preset ids of a kind, from file names alone (fast enough for shell completion)."""
        return [preset_id_of(p) for p in self._files(kind)]

    def _files(self, kind: str) -> Iterator[Path]:
        """Each preset id once, the first directory that has it winning."""
        seen: set[str] = set()
        for directory in self.dirs:
            folder = directory / kind
            if not is_dir(folder):
                continue
            try:  # (iterdir, not glob: a glob compiles a pattern, a cost every query pays)
                found = sorted(folder.iterdir())
            except OSError as exc:
                raise InputError(
                    f"presets directory {str(folder)!r} cannot be read: {exc.strerror}"
                ) from None
            for path in found:
                stem = preset_id_of(path)
                if stem not in seen and path.suffix in (".yaml", ".yml") and is_file(path):
                    seen.add(stem)
                    yield path

    def _load_file(self, kind: str, path: Path, cls: type[T]) -> T:
        if path not in self._cache:
            self._cache[path] = self._read(kind, path)[0]
        loaded = self._cache[path]
        assert isinstance(loaded, cls)
        return loaded

    @staticmethod
    def _read(kind: str, path: Path) -> tuple[object, Any]:
        """A preset and the data it holds: a shipped one built already in this process,
        else from the JSON cache when fresh, else from the YAML (then cached)."""
        entry = cache.entry(path)
        key = _shipped_key(kind, entry, (path,))
        if key is not None and key in _SHIPPED:
            return _SHIPPED[key]  # type: ignore[no-any-return]
        read = Catalog._read_entry(kind, path, entry)
        if key is not None:
            _SHIPPED[key] = read
        return read

    @staticmethod
    def _read_entry(kind: str, path: Path, entry: cache.Entry | None) -> tuple[object, Any]:
        load = LOADERS[kind]
        cached = cache.load(entry)
        if cached is not None:
            try:
                return load(Document(str(path), cached, cached=True), preset_id_of(path)), cached
            except InputError:
                pass  # the rules changed under the cache: read the file itself
        try:
            doc = read_yaml(path)
            preset = load(doc, preset_id_of(path))
        except InputErrors as exc:
            raise PresetError([f"{p}{outside_link(path)}" for p in exc.problems]) from None
        except InputError as exc:
            raise PresetError([f"{exc}{outside_link(path)}"]) from None
        cache.store(entry, doc.data)
        return preset, doc.data

    def _all(self, kind: str, cls: type[T]) -> list[T]:
        if kind not in self._listed:
            self._listed[kind] = paths = tuple(self._files(kind))
            self._read_set(kind, paths)
        return [self._load_file(kind, p, cls) for p in self._listed[kind]]

    def _read_set(self, kind: str, paths: tuple[Path, ...]) -> None:
        """Every preset of a listing, from one cache entry for the whole listing where it
        is fresh (loading/cache.py set_entry), else each file as _read does; those loaded
        already are kept."""
        if len(paths) < 2:
            return
        entry = cache.set_entry(kind, paths)
        key = _shipped_key(kind, entry, paths)
        known = _SHIPPED.get(key) if key is not None else None
        if known is not None:
            for path, preset in known.items():
                self._cache.setdefault(path, preset)
            return
        self._read_listing(kind, paths, entry)
        if key is not None:
            _SHIPPED[key] = {p: self._cache[p] for p in paths}

    def _read_listing(self, kind: str, paths: tuple[Path, ...], entry: cache.Entry | None) -> None:
        load = LOADERS[kind]
        found = cache.load(entry)
        if isinstance(found, list) and len(found) == len(paths):
            pairs = zip(paths, found, strict=True)
            try:
                built = {
                    p: load(Document(str(p), d, cached=True), preset_id_of(p))
                    for p, d in pairs
                    if p not in self._cache
                }
            except InputError:
                pass  # the rules changed under the cache: read each file
            else:
                self._cache.update(built)
                return
        read = [self._read(kind, path) for path in paths]
        for path, (preset, _) in zip(paths, read, strict=True):
            self._cache.setdefault(path, preset)
        cache.store(entry, [data for _, data in read])

    def _find(self, kind: str, name: str, cls: type[P]) -> P:
        found, names = self._lookup(kind, name, cls)
        if found is not None:
            return found
        raise self._unknown(kind, name, names)

    def _read_yours(self, kind: str, cls: type[P]) -> None:
        """Every file of ``kind`` in the user's presets directories, read once: a broken
        one fails each look-up of its kind, by id as by alias (which reads every file),
        as docs/presets.md promises ("files are read strictly"). The shipped presets are
        checked by the tests, and reading all of them would slow every query."""
        shipped = presets_dir()
        if kind in self._checked or all(d == shipped for d in self.dirs):
            return
        self._checked.add(kind)
        for path in self._files(kind):
            if not path.is_relative_to(shipped):
                self._load_file(kind, path, cls)

    @staticmethod
    def _unknown(kind: str, name: str, names: dict[str, str]) -> InputError:
        listing = f"'decodecalc {kind}' lists them"
        hint = suggest(name.strip().lower(), names)
        return InputError(f"unknown {KINDS[kind]} {fragment(name)}{hint or ''} ({listing})")

    def _lookup(self, kind: str, name: str, cls: type[P]) -> tuple[P | None, dict[str, str]]:
        """The preset a name or alias spells, else None with every spelling (for a hint)."""
        named = self._named.get((kind, name))
        if isinstance(named, cls):
            return named, {}
        found, names = self._search(kind, name.strip().lower(), cls)
        if found is not None:
            self._named[kind, name] = found
        return found, names

    def _search(self, kind: str, key: str, cls: type[P]) -> tuple[P | None, dict[str, str]]:
        if _is_safe_stem(key):
            for directory in self.dirs:
                for suffix in (".yaml", ".yml"):
                    path = directory / kind / f"{key}{suffix}"
                    if is_file(path):
                        self._read_yours(kind, cls)
                        return self._load_file(kind, path, cls), {}
        names: dict[str, str] = {}
        for item in self._all(kind, cls):
            spellings = [item.id, *item.aliases]
            if key in (s.lower() for s in spellings):
                return item, {}
            names.update((s.lower(), item.id) for s in spellings)
        for item in self._replaced(kind, cls):  # a built-in your file of its id replaces
            if key in (a.lower() for a in item.aliases):  # keeps its aliases: h100
                return self._search(kind, item.id, cls)
        return None, names

    def _built_in(self, kind: str, cls: type[P]) -> list[P]:
        """Every shipped preset of a kind, those a user file replaces by id included."""
        folder = presets_dir() / kind
        files = sorted(folder.iterdir()) if is_dir(folder) else []
        return [self._load_file(kind, p, cls) for p in files if p.suffix in (".yaml", ".yml")]

    def _yours(self, kind: str, cls: type[P]) -> list[P]:
        """The presets of a kind in the user's folders (none without them)."""
        shipped = presets_dir()
        if all(d == shipped for d in self.dirs):
            return []
        files = [p for p in self._files(kind) if not p.is_relative_to(shipped)]
        return [self._load_file(kind, p, cls) for p in files]

    def _replaced(self, kind: str, cls: type[P]) -> list[P]:
        """The shipped presets a file of the same id in a user folder replaces."""
        yours = {item.id for item in self._yours(kind, cls)}
        return [item for item in self._built_in(kind, cls) if item.id in yours] if yours else []

    def shadowing(self, kind: str, name: str) -> Note | None:
        """A note when ``name`` found one of your presets through an alias that also names
        a built-in one, or a built-in by its id although one of yours has it as an alias:
        either way the name means something the other reader of the command may not
        expect. None without user folders, and for a preset of yours named by its id
        (replacing a built-in that way is what the folder is for)."""
        shipped, key = presets_dir(), name.strip().lower()
        if all(d == shipped for d in self.dirs):
            return None
        found = next(
            (f for (k, n), f in self._named.items() if (k, n.strip().lower()) == (kind, key)), None
        )
        if found is None:
            return None
        cls = type(found)
        path = next(p for p, item in self._cache.items() if item is found)
        if not path.is_relative_to(shipped):
            if found.id.lower() == key:
                return None
            others = [i.id for i in self._built_in(kind, cls) if key in _spellings(i)]
            if not others or others == [found.id]:
                return None
            message = (
                f"{KINDS[kind]} {name!r} is your preset {found.id} ({path}), which takes "
                f"the name over from the built-in {others[0]}"
            )
        else:
            yours = [i.id for i in self._yours(kind, cls) if key in _spellings(i)]
            if not yours:
                return None
            message = (
                f"{KINDS[kind]} {name!r} is the built-in {found.id}: your preset {yours[0]}'s "
                f"alias {key!r} is not used, since a built-in id comes before an alias"
            )
        return Note("preset-shadows-built-in", message)


def _spellings(preset: Preset) -> set[str]:
    """A preset's id and aliases, lower-cased: the names a look-up matches."""
    return {s.lower() for s in (preset.id, *preset.aliases)}


_SHIPPED: dict[tuple[str, str, str], Any] = {}
"""The shipped presets built in this process, by kind, cache file and the key that keeps a
cache entry fresh (each file's stamps, the cache format, the version): a new Catalog (every
API call that makes one, every query run in-process) takes them as built, not from their
JSON again. Presets from user folders are read as before."""


def _shipped_key(
    kind: str, entry: cache.Entry | None, paths: Sequence[Path]
) -> tuple[str, str, str] | None:
    """Where _SHIPPED keeps these files' presets; None for a user folder's, or without a
    cache entry (the cache off, a file that cannot be stat'ed)."""
    # (the text's prefix: a shipped file's path is built on presets_dir's, and
    # Path.is_relative_to cost a query 0.3M instructions over a listing's dozen files)
    root = os.path.join(presets_dir(), "")
    if entry is None or not all(str(p).startswith(root) for p in paths):
        return None
    return kind, str(entry[0]), repr(entry[1])


def matching(items: Sequence[T], value: str | None, key: Callable[[T], str], what: str) -> list[T]:
    """The presets whose ``key`` is ``value`` (any case; all of them for None). A value no
    preset has is an error naming the closest ones: an empty listing would look like a
    catalog without such presets, not like a typo."""
    if value is None:
        return list(items)
    known = {key(item).lower(): key(item) for item in items}
    wanted = value.strip().lower()
    if wanted not in known:
        hint = suggest(wanted, known) or f"; known: {', '.join(sorted(set(known.values())))}"
        raise InputError(f"no preset has {what} {value!r}{hint}")
    return [item for item in items if key(item).lower() == wanted]
