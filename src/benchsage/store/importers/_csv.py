"""Shared CSV plumbing for the importers: stream a file with pyarrow into numpy columns.

The file is read in blocks so that a paper-scale file (millions of rows) never sits in memory as
text: categorical columns arrive dictionary-encoded and become int32 codes, numeric columns
become float64. Every problem ends in a one-line DataError naming the file and the line or
column, so a user with a broken file knows where to look.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from benchsage.errors import DataError
from benchsage.store.table import ARMS

# A number as a benchmark writes it: optional sign, digits with an optional point, exponent.
# NaN and infinity are deliberately not numbers here: a trial that measured "nan" measured nothing.
NUMBER = r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$"
_SNIFF_BYTES = 64 * 1024
_BLOCK_BYTES = 2 << 20  # small blocks keep peak memory low (about 100 MB for 2 M rows); larger ones are no faster
# The fast path parses the whole file at once on all cores: 4 MiB blocks were the quickest of
# 1-16 MiB for a 150 MB file (fewer blocks, fewer dictionaries to unify, enough to share out).
_FAST_BLOCK_BYTES = 4 << 20
_DICT = pa.dictionary(pa.int32(), pa.string())


MAX_INTEGER = 2**31 - 2  # an integer column (a position) is read into 32 bits, and one more than the largest must fit


def check_file(path: Path) -> None:
    """Refuse what cannot be a CSV file before pyarrow produces a less helpful message."""
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.is_dir():
        raise DataError(f"{path}: is a directory, not a data file")
    with path.open("rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    if not head.strip():
        raise DataError(f"{path}: the file is empty")
    if b"\x00" in head:
        raise DataError(f"{path}: binary content, not a CSV file")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        # A multi-byte character cut by the sniff window is not an error.
        if err.start < len(head) - 4:
            raise DataError(f"{path}: not UTF-8 text (byte {err.start}), not a CSV file") from None


def header(path: Path) -> list[str]:
    """The column names of a CSV file, without reading the rest."""
    check_file(path)
    try:
        reader = pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=_SNIFF_BYTES))
    except (pa.ArrowInvalid, OSError) as err:
        raise DataError(f"{path}: cannot read as CSV: {_first_line(err)}") from None
    return list(reader.schema.names)


def require_columns(path: Path, found: Sequence[str], required: Sequence[str | tuple[str, ...]]) -> dict[str, str]:
    """Check required columns; a tuple means "one of these". Maps each requirement to its column."""
    chosen: dict[str, str] = {}
    missing: list[str] = []
    for need in required:
        options = (need,) if isinstance(need, str) else need
        hit = next((name for name in options if name in found), None)
        if hit is None:
            missing.append(" or ".join(repr(o) for o in options))
        else:
            chosen[options[0]] = hit
    if missing:
        raise DataError(f"{path}: missing required column(s) {', '.join(missing)}; found: {', '.join(found) or 'none'}")
    return chosen


@dataclass
class Values:
    """The numbers of a column that may hold several comma-separated numbers per row (ok rows only)."""

    row: np.ndarray  # source row of each number
    index: np.ndarray  # place of the number within its row
    value: np.ndarray
    count: np.ndarray  # how many numbers its row holds


@dataclass
class Columns:
    """What read_columns found: codes and labels of categorical columns, numeric columns, ok rows."""

    path: Path
    n: int
    names: tuple[str, ...]
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    codes: dict[str, np.ndarray] = field(default_factory=dict)
    numbers: dict[str, np.ndarray] = field(default_factory=dict)
    lists: dict[str, Values] = field(default_factory=dict)
    ok: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    # For codes_only columns: the codes of labels that are empty or only whitespace. Their
    # labels may be missing from `labels` (a run label per run: 230,000 strings nobody reads).
    blank: dict[str, np.ndarray] = field(default_factory=dict)


class _Retry(Exception):
    """A block had text in a numeric column: read again with numbers as text."""


def read_columns(
    path: Path,
    *,
    required: Sequence[str | tuple[str, ...]],
    categorical: Sequence[str],
    numeric: Sequence[str] = (),
    integer: Sequence[str] = (),
    lists: Sequence[str] = (),
    status: str | None = None,
    is_ok: Callable[[str], bool] = lambda s: True,
    needed: Sequence[str] = (),
    strict: Sequence[str] = (),
    codes_only: Sequence[str] = (),
) -> tuple[Columns, dict[str, str]]:
    """Stream a CSV file into numpy columns.

    categorical: text columns, returned as codes into labels (in order of first appearance).
    numeric / integer: returned as float64 (NaN where empty); integer columns must hold whole
        numbers from 0 to MAX_INTEGER. lists: numeric columns whose cells may hold several comma-separated numbers.
    status / is_ok: the column saying whether a row is analysable; `needed` columns (and lists)
        must hold finite numbers in ok rows, anything is tolerated in the others. In `strict`
        columns a cell is empty or a number, whatever the row's status (a failed trial still
        has a position).
    codes_only: categorical columns whose labels the caller does not need, only which codes
        are blank (Columns.blank); their labels may be left out of Columns.labels.
    Absent optional columns are simply missing from the result. Returns the columns and, for
    each required entry, the column that satisfied it.
    """
    found, want, chosen = plan(
        path, required=required, categorical=categorical, numeric=numeric, integer=integer, lists=lists, status=status,
        is_ok=is_ok, needed=needed, strict=strict, codes_only=codes_only,
    )
    # The common case, a file without problems, is parsed in one go on all cores. Anything
    # unusual (text in a numeric column, a bad cell, a parse error) is read again below by the
    # block-wise reader, which accepts what it can and otherwise names the line and column.
    if not want.lists:
        fast = _read_fast(path, found, want)
        if fast is not None:
            return fast, chosen
    # First try with numbers parsed by the CSV reader (fast); text in a numeric column (a
    # failed trial that says "error", garbage, "1.5,2.5") makes us read again with text.
    try:
        return _read(path, found, want, as_text=False), chosen
    except _Retry:
        return _read(path, found, want, as_text=True), chosen


@dataclass(frozen=True)
class _Want:
    """The columns read_columns was asked for that the file has, and how to check them."""

    categorical: tuple[str, ...]
    numeric: tuple[str, ...]
    lists: tuple[str, ...]
    integer: tuple[str, ...]
    status: str | None
    is_ok: Callable[[str], bool]
    needed: tuple[str, ...]
    strict: tuple[str, ...]
    codes_only: tuple[str, ...] = ()


def plan(
    path: Path,
    *,
    required: Sequence[str | tuple[str, ...]],
    categorical: Sequence[str],
    numeric: Sequence[str] = (),
    integer: Sequence[str] = (),
    lists: Sequence[str] = (),
    status: str | None = None,
    is_ok: Callable[[str], bool] = lambda s: True,
    needed: Sequence[str] = (),
    strict: Sequence[str] = (),
    codes_only: Sequence[str] = (),
) -> tuple[list[str], _Want, dict[str, str]]:
    """Check the file and its header; the columns it has, what to read of them (read_columns'
    arguments), and the column that satisfied each required entry."""
    check_file(path)
    found = header(path)
    chosen = require_columns(path, found, required)
    present = set(found)
    want = _Want(
        categorical=tuple(c for c in categorical if c in present),
        numeric=tuple(c for c in (*numeric, *integer) if c in present),
        lists=tuple(c for c in lists if c in present),
        integer=tuple(integer),
        status=status if status in present else None,
        is_ok=is_ok,
        needed=tuple(needed),
        strict=tuple(strict),
        codes_only=tuple(c for c in codes_only if c in present),
    )
    return found, want, chosen


@dataclass
class Block:
    """One block of a CSV file as read_blocks gives it: file-wide codes of the categorical
    columns (into labels, which grow as blocks arrive), numbers, and which rows are ok."""

    offset: int  # file row (0-based, header excluded) of the block's first row
    rows: int
    codes: dict[str, np.ndarray]
    numbers: dict[str, np.ndarray]
    lists: dict[str, tuple[np.ndarray, ...]]
    ok: np.ndarray
    labels: dict[str, "_Labels"]


def read_blocks(path: Path, found: list[str], want: _Want, *, as_text: bool, block_bytes: int | None = None) -> Iterator[Block]:
    """The file block by block, each checked as it arrives (a bad cell raises the one-line
    DataError naming its line). Raises _Retry when a numeric column holds text and as_text is
    False: the caller reads again with as_text=True."""
    cat, num, lst, status = want.categorical, want.numeric, want.lists, want.status
    types: dict[str, pa.DataType] = {c: _DICT for c in cat}
    types.update({c: (pa.string() if as_text else pa.float64()) for c in (*num, *lst)})
    try:
        reader = pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(block_size=block_bytes or _BLOCK_BYTES),
            convert_options=pacsv.ConvertOptions(column_types=types, include_columns=[*cat, *num, *lst]),
        )
    except (pa.ArrowInvalid, OSError) as err:
        raise _conversion_or_parse(path, err, as_text) from None

    global_labels: dict[str, _Labels] = {c: _Labels() for c in cat}
    good = np.zeros(0, dtype=bool)
    offset = 0
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        except (pa.ArrowInvalid, OSError) as err:
            raise _conversion_or_parse(path, err, as_text) from None
        rows = batch.num_rows
        codes = {c: global_labels[c].codes(batch.column(c)) for c in cat}
        if status in cat:
            labels = global_labels[status].names
            if len(good) != len(labels):  # new status labels in this block
                good = np.array([want.is_ok(s) for s in labels], dtype=bool)
            ok = good[codes[status]] if len(labels) else np.zeros(rows, dtype=bool)
        else:
            ok = np.ones(rows, dtype=bool)
        numbers = {}
        for c in num:
            must = ok if c in want.needed else None
            numbers[c] = _numbers(path, batch.column(c), c, offset, must, integer=c in want.integer, strict=c in want.strict)
        lists = {c: _list_numbers(path, batch.column(c), c, offset, ok) for c in lst}
        del batch
        yield Block(offset, rows, codes, numbers, lists, ok, global_labels)
        offset += rows


def check_cells(path: Path, found: list[str], want: _Want) -> None:
    """Raise the DataError read_columns raises for a bad cell or line of the file, if any, in
    the same words (the same blocks, checked in the same order), keeping no block once checked:
    for a reader that streams the file and met a cell it cannot take."""
    try:
        for _ in read_blocks(path, found, want, as_text=False):
            pass
    except _Retry:  # as read_columns: numbers read again as text
        for _ in read_blocks(path, found, want, as_text=True):
            pass


def _read(path: Path, found: list[str], want: _Want, *, as_text: bool) -> Columns:
    cat, num, lst = want.categorical, want.numeric, want.lists
    code_parts: dict[str, list[np.ndarray]] = {c: [] for c in cat}
    num_parts: dict[str, list[np.ndarray]] = {c: [] for c in num}
    list_parts: dict[str, list[tuple[np.ndarray, ...]]] = {c: [] for c in lst}
    ok_parts: list[np.ndarray] = []
    global_labels: dict[str, _Labels] = {c: _Labels() for c in cat}
    offset = 0
    for block in read_blocks(path, found, want, as_text=as_text):
        global_labels = block.labels
        for c in cat:
            code_parts[c].append(block.codes[c])
        ok_parts.append(block.ok)
        for c in num:
            num_parts[c].append(block.numbers[c])
        for c in lst:
            list_parts[c].append(block.lists[c])
        offset += block.rows

    # Hand the parser's buffers back to the system: the analysis that follows needs the room.
    pa.default_memory_pool().release_unused()
    if offset == 0:
        raise DataError(f"{path}: the file has a header but no rows")
    out = Columns(path=path, n=offset, names=tuple(found), ok=np.concatenate(ok_parts))
    for c in cat:
        out.labels[c] = tuple(global_labels[c].names)
        out.codes[c] = np.concatenate(code_parts[c]).astype(np.int32, copy=False)
    for c in want.codes_only:
        out.blank[c] = np.array([i for i, label in enumerate(out.labels[c]) if not label.strip()], dtype=np.int64)
    for c in num:
        out.numbers[c] = np.concatenate(num_parts[c])
    for c in lst:
        parts = list_parts[c]
        out.lists[c] = Values(*(np.concatenate([p[i] for p in parts]) for i in range(4)))
    return out


def _read_fast(path: Path, found: list[str], want: _Want) -> Columns | None:
    """The whole file parsed at once with typed columns, or None when anything needs the
    careful reader (which then produces the same columns or the error message).

    Gives exactly what _read gives for a clean file: labels in order of first appearance (the
    per-block dictionaries unified in file order), float64 numbers with NaN for empty cells.
    """
    cat, num = want.categorical, want.numeric
    types: dict[str, pa.DataType] = {c: _DICT for c in cat}
    types.update({c: pa.float64() for c in num})
    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(block_size=_FAST_BLOCK_BYTES, use_threads=True),
            convert_options=pacsv.ConvertOptions(column_types=types, include_columns=[*cat, *num]),
            # malloc's pool rather than pyarrow's default: the parser's 200-250 MiB go back to
            # malloc when the table is dropped, where the analysis's arrays find them again
            # (with mimalloc the peak of a paper-scale analysis was 110 MiB higher).
            memory_pool=pa.system_memory_pool(),
        )
    except (pa.ArrowException, OSError):  # whatever it is, the careful reader says it best
        return None
    n = table.num_rows
    if n == 0:
        return None
    out = Columns(path=path, n=n, names=tuple(found))
    column: pa.ChunkedArray | None = None
    for c in cat:
        column = table.column(c).unify_dictionaries()
        if column.null_count:  # the careful reader turns null cells into ""
            return None
        chunks = column.chunks
        if c in want.codes_only:
            out.blank[c] = _blank_codes(chunks[0].dictionary) if chunks else np.zeros(0, dtype=np.int64)
        else:
            out.labels[c] = tuple(chunks[0].dictionary.to_pylist()) if chunks else ()
        out.codes[c] = np.concatenate([_numpy(chunk.indices) for chunk in chunks]).astype(np.int32, copy=False)
    if want.status in cat:
        good = np.array([want.is_ok(s) for s in out.labels[want.status]], dtype=bool)
        out.ok = good[out.codes[want.status]] if len(good) else np.zeros(n, dtype=bool)
    else:
        out.ok = np.ones(n, dtype=bool)
    for c in num:
        column = table.column(c)
        values = np.concatenate([_numpy(chunk) for chunk in column.chunks]) if column.num_chunks else np.zeros(0)
        values = values.astype(np.float64, copy=False)
        if c in want.needed and not np.isfinite(values[out.ok]).all():
            return None
        if c in want.integer:
            known = values[~np.isnan(values)]
            if ((known != np.floor(known)) | (known < 0) | (known > MAX_INTEGER)).any():
                return None
        out.numbers[c] = values
    del table, column
    # Even in a process that keeps freed memory (benchsage._runtime): trimming here lowered the
    # paper-scale peak by 50-100 MiB for about 0.08 s.
    pa.system_memory_pool().release_unused()
    return out


def _blank_codes(dictionary: pa.Array) -> np.ndarray:
    """Indices of the labels that are empty or whitespace (str.strip's idea of it), without
    turning every label into a Python string: a label holding a printable ASCII character other
    than space is not blank, which numpy decides from the string buffers; only the others (a
    handful; labels are usually run numbers) are looked at in Python. (pyarrow.compute would do
    it too, but importing it costs more than reading a paper-scale file's run labels.)"""
    n = len(dictionary)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if dictionary.null_count or not pa.types.is_string(dictionary.type):
        labels = dictionary.to_pylist()
        return np.array([i for i, label in enumerate(labels) if label is None or not label.strip()], dtype=np.int64)
    _, offsets_buf, data_buf = dictionary.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32, count=n + 1, offset=dictionary.offset * 4).astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    solid = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum((data > 32) & (data < 127), out=solid[1:])
    candidates = np.flatnonzero(solid[offsets[1:]] == solid[offsets[:-1]])
    labels = dictionary.take(pa.array(candidates, type=pa.int64())).to_pylist() if len(candidates) else []
    return np.array([i for i, label in zip(candidates.tolist(), labels) if not label.strip()], dtype=np.int64)


def _conversion_or_parse(path: Path, err: BaseException, as_text: bool) -> BaseException:
    message = _first_line(err)
    if not as_text and "conversion error" in message.lower():
        return _Retry()
    return DataError(f"{path}: cannot read as CSV: {message}")


class _Labels:
    """The file-wide labels of one categorical column, numbered by first appearance.

    Each block arrives with its own dictionary, mapped here onto the labels seen so far. (Plain
    dict lookups: pyarrow's index_in would import pandas, which costs more than the lookups.)
    """

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}

    def codes(self, column: pa.Array) -> np.ndarray:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        index, names = self._index, self.names
        remap = np.empty(max(len(column.dictionary), 1), dtype=np.int32)
        for i, name in enumerate(column.dictionary.to_pylist()):
            code = index.get(name)
            if code is None:
                code = index[name] = len(names)
                names.append(name)
            remap[i] = code
        indices = column.indices
        if indices.null_count:  # a cell the reader turned into null counts as ""
            codes = remap[np.nan_to_num(_numpy(indices), nan=0).astype(np.int64)]
            codes[np.isnan(_numpy(indices))] = self._add("")
            return codes
        return remap[_numpy(indices)]

    def _add(self, name: str) -> int:
        if name not in self._index:
            self._index[name] = len(self.names)
            self.names.append(name)
        return self._index[name]


def _numbers(
    path: Path, column: pa.Array, name: str, offset: int, must: np.ndarray | None, *, integer: bool, strict: bool = False
) -> np.ndarray:
    """A block of a numeric column as float64; rows in `must` need a finite number, and in a
    `strict` column every non-empty cell must be a number."""
    import pyarrow.compute as pc  # only for files that need the careful reader

    if pa.types.is_string(column.type):
        text = pc.utf8_trim_whitespace(column)
        is_number = pc.fill_null(pc.match_substring_regex(text, NUMBER), False)
        values = pc.cast(pc.if_else(is_number, text, pa.scalar(None, pa.string())), pa.float64()).to_numpy(zero_copy_only=False)
        if must is not None or strict:
            garbage = ~is_number.to_numpy(zero_copy_only=False) & _present(text)
            if not strict:
                garbage &= must
            bad = np.flatnonzero(garbage)
            if len(bad):
                row = int(bad[0])
                raise DataError(f"{path}: line {offset + row + 2}, column '{name}': {text[row].as_py()!r} is not a number")
    else:
        values = _numpy(column).astype(np.float64, copy=False)
    if must is not None:
        bad = np.flatnonzero(must & ~np.isfinite(values))
        if len(bad):
            row = int(bad[0])
            what = "is empty" if np.isnan(values[row]) else f"holds {values[row]:g}, not a finite number"
            raise DataError(f"{path}: line {offset + row + 2}, column '{name}' {what}")
    if integer:
        bad = np.flatnonzero(~np.isnan(values) & ((values != np.floor(values)) | (values < 0) | (values > MAX_INTEGER)))
        if len(bad):
            row = int(bad[0])
            raise DataError(f"{path}: line {offset + row + 2}, column '{name}': {values[row]:g} is not a whole number from 0 to "
                            f"{MAX_INTEGER}")
    return values


def _list_numbers(path: Path, column: pa.Array, name: str, offset: int, ok: np.ndarray) -> tuple[np.ndarray, ...]:
    """A block of a column whose cells hold one or more comma-separated numbers (ok rows only)."""
    import pyarrow.compute as pc  # only for files that need the careful reader

    rows = np.flatnonzero(ok)
    if not pa.types.is_string(column.type):
        values = _numbers(path, column, name, offset, ok, integer=False)[rows]
        return rows + offset, np.zeros(len(rows), dtype=np.int64), values, np.ones(len(rows), dtype=np.int64)
    text = pc.fill_null(column, "").take(pa.array(rows))
    split = pc.split_pattern(text, ",")
    count = pc.list_value_length(split).to_numpy(zero_copy_only=False).astype(np.int64)
    pieces = pc.utf8_trim_whitespace(pc.list_flatten(split))
    is_number = pc.fill_null(pc.match_substring_regex(pieces, NUMBER), False).to_numpy(zero_copy_only=False)
    parent = np.repeat(np.arange(len(count)), count)
    if not is_number.all():
        r = int(parent[np.flatnonzero(~is_number)[0]])
        raise DataError(
            f"{path}: line {offset + int(rows[r]) + 2}, column '{name}': {text[r].as_py()!r} is not a number "
            "or a comma-separated list of numbers"
        )
    values = pc.cast(pieces, pa.float64()).to_numpy(zero_copy_only=False)
    index = np.arange(len(parent)) - np.repeat(np.cumsum(count) - count, count)
    return rows[parent] + offset, index, values, count[parent]


def _numpy(array: pa.Array) -> np.ndarray:
    """A primitive arrow array as numpy, nulls as NaN; reads the buffers directly because
    pyarrow's to_numpy imports pandas, which costs more than reading the whole file."""
    if not (pa.types.is_integer(array.type) or pa.types.is_floating(array.type)):
        return array.to_numpy(zero_copy_only=False)
    dtype = np.dtype(array.type.to_pandas_dtype())
    data = np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize)
    if not array.null_count:
        return data
    bits = np.frombuffer(array.buffers()[0], dtype=np.uint8)
    valid = np.unpackbits(bits, bitorder="little")[array.offset : array.offset + len(array)].astype(bool)
    return np.where(valid, data, np.nan)


def _present(text: pa.Array) -> np.ndarray:
    """Cells that hold some text (empty cells are reported as empty, not as garbage)."""
    import pyarrow.compute as pc  # only for files that need the careful reader

    return pc.fill_null(pc.greater(pc.utf8_length(text), 0), False).to_numpy(zero_copy_only=False)


def arms(path: Path, labels: tuple[str, ...], codes: np.ndarray, name: str) -> np.ndarray:
    """The arm column as int8 codes (FIXED_CODE 0, RANDOM_CODE 1); any other value is an error."""
    lookup = np.full(len(labels), -1, dtype=np.int8)
    for i, label in enumerate(labels):
        if label in ARMS:
            lookup[i] = ARMS.index(label)
    arm = lookup[codes]
    bad = np.flatnonzero(arm < 0)
    if len(bad):
        row = int(bad[0])
        raise DataError(f"{path}: line {row + 2}, column '{name}': {labels[codes[row]]!r} is neither 'fixed' nor 'random'")
    return arm


def combined_ids(*codes: np.ndarray) -> np.ndarray:
    """Dense int64 ids for the combinations of several code columns that occur.

    Used for run ids: a run is identified by (worker, run label), because two workers may both
    call their first run "0". Ids follow the codes (worker first, then run label in order of
    first appearance), so they are stable for a given file.
    """
    n = len(codes[0])
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if len(codes) == 2:
        ids = _nested_ids(codes[0], codes[1])
        if ids is not None:
            return ids
    key = np.zeros(n, dtype=np.int64)
    for c in codes:
        key *= int(c.max()) + 1
        key += c
    size = int(key.max()) + 1
    if size <= 4 * n:  # the usual case: a lookup table is cheaper than sorting millions of keys
        seen = np.zeros(size, dtype=bool)
        seen[key] = True
        rank = np.cumsum(seen) - 1
        return rank[key]
    return np.unique(key, return_inverse=True)[1].astype(np.int64)


def _nested_ids(outer: np.ndarray, inner: np.ndarray) -> np.ndarray | None:
    """combined_ids(outer, inner) in O(n) when every inner code occurs under one outer code only
    (each run label used by one worker: the usual case), else None.

    The combinations are then the inner codes themselves, numbered in (outer, inner) order.
    """
    size = int(inner.max()) + 1
    owner = np.full(size, -1, dtype=np.int64)
    owner[inner] = outer  # any one row's outer code per inner code...
    if not np.array_equal(owner[inner], outer):  # ...must be every row's
        return None
    present = np.flatnonzero(owner >= 0)
    by_outer = present[np.argsort(owner[present], kind="stable")]  # stable: inner order within outer
    rank = np.empty(size, dtype=np.int64)
    rank[by_outer] = np.arange(len(by_outer))
    return rank[inner]


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
