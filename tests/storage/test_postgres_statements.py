"""Which statements the PostgreSQL scope runs as reads (a borrowed connection, no version
move) and which as writes (a transaction of their own that moves the scope's version)."""

from __future__ import annotations

import pytest

from backend.storage.postgres.statements import is_read


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "  select k FROM t",
        "VALUES (1)",
        "SHOW server_version",
        "EXPLAIN SELECT 1",
        "WITH k AS (SELECT ?::text AS scope) SELECT * FROM t JOIN k USING (scope)",
        "WITH RECURSIVE n(x) AS (VALUES (1) UNION ALL SELECT x + 1 FROM n) SELECT x FROM n",
        "WITH a AS (SELECT 'delete me' AS note) SELECT note FROM a",  # a verb in a literal
        'WITH a AS (SELECT 1 AS "update") SELECT * FROM a',  # ... in a quoted name
        "WITH a AS (SELECT 1) -- then UPDATE nothing\nSELECT * FROM a",  # ... in a comment
        "/* MERGE? no */ WITH a AS (SELECT 1) SELECT * FROM a",
    ],
)
def test_reads(sql):
    assert is_read(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO t VALUES (1)",
        "UPDATE t SET v = 1",
        "DELETE FROM t",
        "CREATE TABLE u (x int)",
        "WITH k AS (SELECT ?::text AS scope) INSERT INTO t SELECT scope FROM k",
        "WITH gone AS (DELETE FROM t RETURNING k) SELECT count(*) FROM gone",
        "WITH moved AS (UPDATE t SET v = 'x' RETURNING k) SELECT * FROM moved",
        "with m as (merge into t using u on t.k = u.k when matched then do nothing) select 1",
        "WITH a AS (SELECT 1 AS update) SELECT * FROM a",  # an unquoted name: the safe side
        "",
    ],
)
def test_writes(sql):
    assert not is_read(sql)
