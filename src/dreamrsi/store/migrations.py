"""Schema migrations of the SQLite store, applied in order and recorded in ``migrations``."""

from __future__ import annotations

SCHEMA_VERSION = 1

MIGRATIONS: dict[int, tuple[str, str]] = {
    1: (
        "initial schema: tasks, runs, nodes, in-flight attempts, ledger and chains",
        """
        CREATE TABLE tasks (
            digest TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            evaluator_digest TEXT NOT NULL,
            spec TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            task_digest TEXT NOT NULL REFERENCES tasks(digest),
            task_name TEXT NOT NULL,
            policy TEXT NOT NULL,
            config TEXT NOT NULL,
            seed INTEGER NOT NULL,
            status TEXT NOT NULL,
            stop_reason TEXT,
            created_at REAL NOT NULL,
            finished_at REAL,
            heartbeat_at REAL,
            pid INTEGER,
            elapsed_s REAL NOT NULL DEFAULT 0
        );
        CREATE TABLE nodes (
            node_id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            parent_id TEXT,
            seq INTEGER NOT NULL,
            round INTEGER NOT NULL,
            commit_id TEXT,
            status TEXT NOT NULL,
            valid INTEGER NOT NULL,
            score REAL,
            raw_score REAL,
            feedback TEXT NOT NULL,
            metrics TEXT NOT NULL,
            plan TEXT,
            wall_ms INTEGER NOT NULL,
            cpu_ms INTEGER NOT NULL,
            tokens_in INTEGER NOT NULL,
            tokens_out INTEGER NOT NULL,
            money_usd REAL NOT NULL,
            candidate_hash TEXT,
            artifacts TEXT NOT NULL,
            evidence TEXT NOT NULL,
            created_at REAL NOT NULL,
            UNIQUE (run_id, seq)
        );
        CREATE TABLE attempts (
            node_id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            parent_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            round INTEGER NOT NULL,
            parent_commit TEXT,
            started_at REAL NOT NULL
        );
        CREATE TABLE ledger (
            chain TEXT NOT NULL,
            seq INTEGER NOT NULL,
            id TEXT NOT NULL UNIQUE,
            run_id TEXT,
            dream_id TEXT,
            node_id TEXT,
            t TEXT NOT NULL,
            actor TEXT NOT NULL,
            cmd TEXT NOT NULL,
            args TEXT NOT NULL,
            exit INTEGER,
            commit_id TEXT,
            artifacts TEXT NOT NULL,
            parsed TEXT,
            env_digest TEXT NOT NULL,
            duration_ms INTEGER NOT NULL,
            admissible INTEGER NOT NULL,
            belief_updates TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL,
            PRIMARY KEY (chain, seq)
        );
        CREATE TABLE chains (
            chain TEXT PRIMARY KEY,
            length INTEGER NOT NULL,
            head TEXT NOT NULL
        );
        CREATE INDEX ledger_node ON ledger(node_id);
        """,
    ),
}
