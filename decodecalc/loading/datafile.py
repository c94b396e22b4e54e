"""Strict reading of data files (YAML presets and deployment files, config.json):
duplicate keys refused, positions kept for messages.

PyYAML's ``safe_load`` silently keeps the last of two duplicate keys, so this composes the
node tree with the same SafeLoader, checks it, and constructs the document from it: the
same safe construction ``yaml.safe_load`` does, with the check in between.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from decodecalc.errors import InputError, InputErrors
from decodecalc.record import field, record
from decodecalc.units import UNDERSCORES

if TYPE_CHECKING:
    import json

    import yaml

MAX_FILE_BYTES = 1_000_000
"""Largest preset or config file read: real ones are a few kilobytes."""

KeyPath = tuple[str | int, ...]

FRAGMENT_CHARS = 40
"""Most characters of a file's content a message quotes."""


def fragment(value: object) -> str:
    """A value as a message quotes it: escaped as ascii() does (quotes, control and
    non-ASCII characters) and cut to FRAGMENT_CHARS. A file that is no preset at all (a
    link to a private key or /etc/passwd) is never quoted whole on stderr or in CI logs.

    >>> fragment("fp8"), fragment("x" * 50)
    ("'fp8'", "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (50 characters)")
    """
    text = ascii(value)
    if len(text) <= FRAGMENT_CHARS:
        return text
    return f"{text[:FRAGMENT_CHARS]}... ({len(str(value)):,} characters)"


def key_label(key: object) -> str:
    """A key as a message names it: plain when short and printable ASCII, else a fragment."""
    text = str(key)
    plain = text.isascii() and text.isprintable() and len(text) <= FRAGMENT_CHARS
    return text if plain else fragment(key)


@record
class Document:
    """A loaded document and where each key path starts in the file (1-based)."""

    path: str
    data: Any
    marks: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)
    duplicates: tuple[str, ...] = ()
    """Duplicate-key problems, kept when the caller reports every problem in one pass."""
    cached: bool = False
    """Built from the preset cache (loading/cache.py), which keeps only data checked whole
    when it was stored, and no line:column marks: a check that builds nothing (a
    config.json field no reader knows) need not run again, and what a loader leaves for
    first use may be left."""
    key_marks: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)
    """Where each key itself is written: ``marks`` holds where its value starts, which for
    a block mapping or list is the line below the key."""

    def where(self, key_path: KeyPath) -> str:
        """``file:line:col`` of the deepest known prefix of ``key_path``."""
        for end in range(len(key_path), -1, -1):
            mark = self.marks.get(key_path[:end])
            if mark is not None:
                return f"{self.path}:{mark[0]}:{mark[1]}"
        return self.path

    def where_key(self, key_path: KeyPath) -> str:
        """``file:line:col`` of the key itself (an unknown key is there, not at its value),
        else where() of its value."""
        mark = self.key_marks.get(key_path)
        return f"{self.path}:{mark[0]}:{mark[1]}" if mark else self.where(key_path)


def _walk(
    node: yaml.Node,
    key_path: KeyPath,
    marks: tuple[dict[KeyPath, tuple[int, int]], dict[KeyPath, tuple[int, int]]],
    path: str,
    duplicates: list[str],
    seen_nodes: set[int],
) -> None:
    """Record where every key path starts, and every duplicate key. Each node is visited
    once: an alias is the same node again, and following every alias of a YAML "billion
    laughs" file would take forever. ``marks``: where each value starts, where each key is."""
    import yaml

    values, keys = marks
    values.setdefault(key_path, (node.start_mark.line + 1, node.start_mark.column + 1))
    if id(node) in seen_nodes:
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: dict[object, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                kind = "a list" if isinstance(key_node, yaml.SequenceNode) else "a mapping"
                raise InputError(
                    f"{path}:{line}:{key_node.start_mark.column + 1}: a key is {kind}; "
                    "keys are names or numbers (a '? ' line starts a complex key)"
                )
            key = key_node.value
            if key in seen:
                label = ".".join(str(p) for p in (*key_path, key))
                duplicates.append(
                    f"{path}:{line}:{key_node.start_mark.column + 1}: {label}: duplicate key "
                    f"(first at line {seen[key]}; YAML would silently keep the last)"
                )
            seen[key] = line
            keys.setdefault((*key_path, str(key)), (line, key_node.start_mark.column + 1))
            _walk(value_node, (*key_path, str(key)), marks, path, duplicates, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*key_path, index), marks, path, duplicates, seen_nodes)
    elif node.tag in (INT, FLOAT) and "_" in node.value:
        mark = node.start_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}"
        raise InputError(f"{where}: {node.value}: {UNDERSCORES}")
    elif node.tag == INT and len(node.value) > MAX_DIGITS:
        mark = node.start_mark
        raise InputError(f"{path}:{mark.line + 1}:{mark.column + 1}: {_too_long(node.value)}")


INT, FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"


MAX_DIGITS = 4300
"""Python turns at most this many digits into an integer (sys.get_int_max_str_digits), and
no decodecalc value needs a thousandth of them."""


def _too_long(digits: str) -> str:
    return f"a number of {len(digits):,} digits; no decodecalc value has more than a few dozen"


def parse_yaml(text: str, path: str, keep_duplicates: bool = False) -> Document:
    """Parse YAML text strictly; any problem becomes an InputError naming file:line:col.
    Duplicate keys are refused, or with ``keep_duplicates`` returned in the document."""
    import yaml  # here, not at the top: a query served from the cache never needs it

    # The C-accelerated safe loader when PyYAML was built with libyaml.
    loader_class: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise InputError(f"{path}: the file is empty")
        marks: dict[KeyPath, tuple[int, int]] = {}
        key_marks: dict[KeyPath, tuple[int, int]] = {}
        duplicates: list[str] = []
        _walk(node, (), (marks, key_marks), path, duplicates, set())
        if duplicates and not keep_duplicates:
            raise InputErrors(duplicates)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        _if_not_json(text, path)
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        raise InputError(f"{where}: not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        _if_not_json(text, path)
        raise InputError(f"{path}: not valid YAML: {exc}") from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to be a decodecalc file") from None
    finally:
        loader.dispose()
    return Document(path, data, marks, tuple(duplicates), key_marks=key_marks)


def _if_not_json(text: str, path: str) -> None:
    """A .json file the YAML parser refused is told what JSON's parser finds, as every
    other read of a JSON file (read_json) tells it: one wording for a file, by its format."""
    if not path.lower().endswith(".json"):
        return
    import json

    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise _not_json(path, exc) from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply") from None


def _not_json(path: object, exc: json.JSONDecodeError) -> InputError:
    return InputError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}")


def is_file(path: Path) -> bool:
    """Path.is_file, answering False for names the OS refuses (too long, a NUL byte)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    """Path.is_dir, answering False for names the OS refuses (a component over 255
    characters, a NUL byte)."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def folder_config(path: Path, name: str) -> Path:
    """A model folder's config.json (a checkpoint, as vLLM takes one), where every command
    that reads a config takes the folder too."""
    if not is_file(path / "config.json"):
        raise InputError(f"model folder {name!r} has no config.json to read")
    return path / "config.json"


def _read_text(path: Path) -> str:
    import stat

    try:
        info = path.stat()
        # Opening a FIFO or a device could wait forever; a preset is a plain file.
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{path}: not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            size = info.st_size
            raise InputError(f"{path}: file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return text


def read_text(path: Path) -> str:
    """A data file's text, held to the same limits as every file read (a regular UTF-8
    file of at most MAX_FILE_BYTES)."""
    return _read_text(path)


def read_yaml(path: Path, keep_duplicates: bool = False) -> Document:
    """Read and parse a YAML file, refusing unreadable, binary or oversized files."""
    return parse_yaml(_read_text(path), str(path), keep_duplicates)


def read_json(path: Path) -> Document:
    """Read a JSON file (a model's config.json) with the same care: duplicate keys and
    anything but an object at the top are refused."""
    import json

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in pairs:
            if key in found:
                raise InputError(f"{path}: duplicate key {key!r}")
            found[key] = value
        return found

    def whole(digits: str) -> int:
        if len(digits) > MAX_DIGITS:
            raise InputError(f"{path}: {_too_long(digits)}")
        return int(digits)

    try:
        data = json.loads(_read_text(path), object_pairs_hook=unique, parse_int=whole)
    except json.JSONDecodeError as exc:
        raise _not_json(path, exc) from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object (a model's config.json)")
    return Document(str(path), data)
