"""Statements of the request path run on the driver's own cursor.

A decision runs a few small statements (the host cache's scan, the
claim; a release or a keep as many). Through ``Connection.execute`` each
pays SQLAlchemy's execution and result layers: the statement's cache
key, the execution context, the cursor's description (psycopg builds an
object per column for it) and a result object with its row metadata,
several times what the driver and the database spend on a one-row
answer. A ``DriverStatement`` is compiled once per dialect and run with
the driver's cursor: plain tuples back, type conversions applied only
where the dialect needs one (SQLite's datetimes and booleans, MariaDB's
booleans).

It still runs through the ``Connection``'s statement hook
(``_cursor_execute``): ``before_cursor_execute`` events, echo logging,
and errors wrapped and handled as SQLAlchemy does (a dropped connection
invalidates it and the pool's older ones, ``connection_invalidated``
set), so callers keep their retry on a new connection. It takes part in
the connection's transaction state as the driver has it: use it on a
connection in autocommit, or in a transaction SQLAlchemy began
(``Connection.begin()``, ``claim_sql.write_transaction``, or a first
statement through ``Connection.execute``). Where SQLAlchemy began none,
psycopg would open one of its own, which ``Connection.commit()`` does
not end: the pool's rollback would undo it.
"""

import dataclasses
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect


@dataclasses.dataclass
class _Form:
    """A statement as one dialect's driver takes it."""

    sql: str
    #: Parameter names in order, for a positional paramstyle (qmark).
    positions: tuple[str, ...] | None
    #: Conversions of parameters before the driver sees them, by name.
    binds: dict[str, Callable[[Any], Any]]
    #: The values of the statement's own (literal) parameters.
    fixed: dict[str, object]
    #: The selected columns' types, for their result conversions.
    types: tuple[sa.types.TypeEngine, ...]
    #: The conversions of result columns, as (column index, conversion
    #: of the column's values); None until the first run gives the
    #: driver's type codes (and when no column needs one, empty).
    results: list[tuple[int, Callable[[tuple], list]]] | None = None


class DriverStatement:
    """``statement`` compiled once per dialect, run on the driver's
    cursor; ``shape`` makes each row (default: the driver's tuple).
    Thread-safe: two threads compiling at once build the same form.

    Parameters are passed by name, as with ``Connection.execute``;
    expanding parameters (``IN``) are not supported.
    """

    def __init__(self, statement: sa.Executable,
                 shape: Callable[[tuple], Any] | None = None):
        self.statement = statement
        self._shape = shape
        #: By dialect and driver: the paramstyle and the conversions are
        #: the driver's.
        self._forms: dict[tuple[str, str], _Form] = {}

    def rows(self, connection: sa.Connection,
             parameters: Mapping[str, object]) -> list:
        """Every row of the statement's result."""
        form, arguments = self._prepared(connection, parameters)
        cursor = _executed(connection, form, arguments)
        try:
            rows = cursor.fetchall()
            if form.results is None:
                form.results = _result_processors(
                    connection.dialect, form.types, cursor.description)
        except BaseException as e:
            connection._handle_dbapi_exception(
                e, form.sql, arguments, cursor, None)
        finally:
            cursor.close()
        if form.results and rows:
            rows = _converted(rows, form.results)
        if self._shape is not None:
            return list(map(self._shape, rows))
        return list(rows)

    def run(self, connection: sa.Connection,
            parameters: Mapping[str, object]) -> int:
        """Run a statement that returns no rows (an INSERT, an UPDATE);
        the number of rows it matched, as ``CursorResult.rowcount``
        counts them (SQLAlchemy's MySQL dialects connect with
        ``CLIENT.FOUND_ROWS``). On a connection SQLAlchemy began a
        transaction on, or in autocommit: see the module's docstring."""
        form, arguments = self._prepared(connection, parameters)
        cursor = _executed(connection, form, arguments)
        try:
            return cursor.rowcount
        finally:
            cursor.close()

    def _prepared(self, connection: sa.Connection,
                  parameters: Mapping[str, object]
                  ) -> tuple[_Form, dict[str, object] | tuple]:
        """The statement's form for the connection's driver, and the
        arguments as that driver takes them."""
        dialect = connection.dialect
        key = (dialect.name, dialect.driver)
        form = self._forms.get(key)
        if form is None:
            form = self._forms[key] = self._compile(dialect)
        return form, _arguments(form, parameters)

    def _compile(self, dialect: Dialect) -> _Form:
        compiled = self.statement.compile(dialect=dialect)
        binds, fixed = {}, {}
        for bind, name in compiled.bind_names.items():
            if bind.expanding:
                raise ValueError(f"expanding parameter {name!r} not "
                                 "supported")
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if process is not None:
                binds[name] = process
            if not bind.required:
                fixed[name] = bind.value
        if dialect.paramstyle not in ("pyformat", "format", "qmark"):
            raise ValueError(f"paramstyle {dialect.paramstyle} not "
                             "supported")
        positions = (tuple(compiled.positiontup)
                     if dialect.positional else None)
        types = tuple(column.type for column
                      in getattr(self.statement, "selected_columns", ()))
        return _Form(compiled.string, positions, binds, fixed, types)


def _arguments(form: _Form, parameters: Mapping[str, object]
               ) -> dict[str, object] | tuple:
    values = {**form.fixed, **parameters}
    for name, process in form.binds.items():
        if name in values:
            values[name] = process(values[name])
    if form.positions is None:
        return values
    return tuple(values[name] for name in form.positions)


def _executed(connection: sa.Connection, form: _Form,
              arguments: dict[str, object] | tuple) -> Any:
    """A cursor of the connection's driver that ran the statement (the
    caller closes it); errors wrapped as SQLAlchemy wraps them."""
    try:
        cursor = connection.connection.cursor()
    except BaseException as e:
        # Wrapped and the connection invalidated, as SQLAlchemy's own
        # path does, so that the caller's retry on a new one runs.
        connection._handle_dbapi_exception(
            e, form.sql, arguments, None, None)
    try:
        connection._cursor_execute(cursor, form.sql, arguments)
    except BaseException:
        cursor.close()
        raise
    return cursor


def _result_processors(dialect: Dialect,
                       types: tuple[sa.types.TypeEngine, ...],
                       description: Any
                       ) -> list[tuple[int, Callable[[tuple], list]]]:
    """The dialect's conversions of the selected columns' values, by
    column index, or an empty list when none needs one."""
    if description is None or len(description) != len(types):
        return []
    conversions = []
    # One per conversion, shared by the columns it converts: a report
    # stamps its row's times alike, read once then.
    kept: dict[Callable[[Any], Any], _Kept] = {}
    for index, (kind, column) in enumerate(zip(types, description,
                                               strict=True)):
        process = kind.dialect_impl(dialect).result_processor(
            dialect, column[1])
        if process is None:
            continue
        if isinstance(kind, _IMMUTABLE):
            if process not in kept:
                kept[process] = _Kept(process)
            conversions.append((index, kept[process].column))
        else:
            conversions.append((index, _Each(process).column))
    return conversions


#: Types whose results are immutable and a function of the value read,
#: so that one converted value may stand for every equal one.
_IMMUTABLE = (sa.DateTime, sa.Date, sa.Time, sa.Boolean)
#: Converted values a ``_Kept`` holds at most: a refresh of a simulated
#: fleet reads a few distinct stamps, of real nodes one per node.
_KEPT = 4096


class _Each:
    """A column's values converted one by one, None left as it is."""

    def __init__(self, process: Callable[[Any], Any]):
        self._process = process

    def column(self, values: tuple) -> list:
        process = self._process
        return [value if value is None else process(value)
                for value in values]


class _Kept(dict):
    """Columns' values converted once per distinct value: the results by
    the value read (None read as None), at most ``_KEPT`` of them."""

    def __init__(self, process: Callable[[Any], Any]):
        super().__init__({None: None})
        self._process = process

    def __missing__(self, value: Any) -> Any:
        if value is None:  # cleared by another thread meanwhile
            return None
        if len(self) > _KEPT:
            # Checked as a value is added, not once per column: a scan
            # of many distinct values would hold them all till the next.
            self.clear()
            self[None] = None
        converted = self[value] = self._process(value)
        return converted

    def column(self, values: tuple) -> list:
        return list(map(self.__getitem__, values))


def _converted(rows: list[tuple],
               conversions: list[tuple[int, Callable[[tuple], list]]]
               ) -> Iterator[tuple]:
    """``rows`` with their converted columns' values converted: column by
    column, so that the columns without a conversion cost nothing."""
    columns: list = list(zip(*rows, strict=True))
    for index, convert in conversions:
        columns[index] = convert(columns[index])
    # An iterator: zip reuses its tuple for a row that ``shape`` copies.
    return zip(*columns, strict=True)
