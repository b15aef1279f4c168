"""Schema migrations of the SQLite store, applied in order and recorded in ``migrations``.

Each migration is SQL; the one numbered :data:`RECORDS_VERSION` also runs a step in Python
(``SqliteRunStore._anchor_records``) that writes the records of the runs and nodes already in
the store into their chains. Migration 4 only adds indexes (``dreamrsi.store.tree_sql`` reads
trees through them). Migration 5 adds the column ``history_used`` to ``nodes`` (empty for
nodes recorded before it: the conservative reading, see ``core.model.Node``). Migration 6
adds the table of survival passes (``dreamrsi.store.survival``). Migration 7 adds the
knowledge layer's tables: imported agent traces and the append-only knowledge event log
(``dreamrsi.store.knowledge``). Migration 8 adds the table of learned models, the L2 priors
and L3 value models of task families, versioned (``dreamrsi.store.learned``).
Migration 9 only adds indexes for histories of a million nodes (``docs/scale.md``): a run's
nodes as replay and spend read them (without a node's feedback, metrics and other long
columns), and a chain's model calls.
"""

from __future__ import annotations

SCHEMA_VERSION = 9
RECORDS_VERSION = 3

MODEL_CALLS = "substr(cmd, 1, 11) = 'model chat '"
"""The rows of the partial index ``ledger_model_calls``: a query reads it only when its WHERE
holds this very term (``spend_sql.SpendQueries.model_spend``)."""

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
    2: (
        "dreaming: policy versions, their replay scores, dreams, loops",
        """
        CREATE TABLE policies (
            version_id TEXT PRIMARY KEY,
            family TEXT NOT NULL,
            params TEXT NOT NULL,
            code_digest TEXT,
            task_digest TEXT NOT NULL,
            parent_id TEXT,
            dream_id TEXT,
            created_at REAL NOT NULL
        );
        CREATE TABLE dreams (
            dream_id TEXT PRIMARY KEY,
            task_digest TEXT NOT NULL,
            evaluator_digest TEXT NOT NULL,
            objective TEXT NOT NULL,
            config TEXT NOT NULL,
            incumbent TEXT NOT NULL,
            selected TEXT,
            promoted INTEGER,
            report TEXT,
            created_at REAL NOT NULL,
            finished_at REAL
        );
        CREATE TABLE policy_scores (
            dream_id TEXT NOT NULL REFERENCES dreams(dream_id),
            version_id TEXT NOT NULL REFERENCES policies(version_id),
            tree_id TEXT NOT NULL,
            split TEXT NOT NULL,
            value REAL NOT NULL,
            quality REAL NOT NULL,
            revealed INTEGER NOT NULL,
            rounds INTEGER NOT NULL,
            out_of_support INTEGER NOT NULL,
            selections INTEGER NOT NULL,
            PRIMARY KEY (dream_id, version_id, tree_id)
        );
        CREATE TABLE loops (
            loop_id TEXT PRIMARY KEY,
            task_digest TEXT NOT NULL,
            arm TEXT NOT NULL,
            config TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE TABLE loop_rounds (
            loop_id TEXT NOT NULL REFERENCES loops(loop_id),
            round INTEGER NOT NULL,
            run_id TEXT NOT NULL,
            version_id TEXT NOT NULL,
            dream_id TEXT,
            PRIMARY KEY (loop_id, round)
        );
        CREATE INDEX policy_scores_version ON policy_scores(version_id);
        CREATE INDEX runs_task ON runs(task_digest)
        """,
    ),
    3: (
        "ledger records: each run and node recorded in its run's chain (those already in the "
        "store anchored at this upgrade)",
        "",
    ),
    4: (
        "indexes for reading big trees: nodes by status, by parent, by candidate",
        """
        CREATE INDEX nodes_status ON nodes(run_id, status, score);
        CREATE INDEX nodes_children ON nodes(run_id, parent_id, seq, node_id, status, score);
        CREATE INDEX nodes_candidate ON nodes(run_id, candidate_hash, seq)
        """,
    ),
    5: (
        "nodes: the runs of the history context each attempt declared it used (HISTORY:)",
        """
        ALTER TABLE nodes ADD COLUMN history_used TEXT
        """,
    ),
    6: (
        "survival passes: a node checked against a base, running until its verdict and report",
        """
        CREATE TABLE survival_passes (
            pass_id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            node_id TEXT NOT NULL,
            commit_id TEXT NOT NULL,
            base_commit TEXT NOT NULL,
            status TEXT NOT NULL,
            config TEXT NOT NULL,
            report TEXT,
            created_at REAL NOT NULL,
            finished_at REAL
        );
        CREATE INDEX survival_passes_node ON survival_passes(run_id, node_id)
        """,
    ),
    7: (
        "knowledge: imported agent traces (redacted, staged) and the knowledge event log",
        """
        CREATE TABLE traces (
            trace_id TEXT PRIMARY KEY,
            source_format TEXT NOT NULL,
            source TEXT NOT NULL,
            imported_at REAL NOT NULL,
            status TEXT NOT NULL,
            blob TEXT NOT NULL,
            task TEXT NOT NULL,
            session_id TEXT NOT NULL,
            outcome TEXT NOT NULL,
            cost_usd REAL NOT NULL,
            steps INTEGER NOT NULL,
            tool_calls INTEGER NOT NULL,
            feedback TEXT NOT NULL,
            note TEXT NOT NULL
        );
        CREATE INDEX traces_status ON traces(status, imported_at);
        CREATE TABLE knowledge_events (
            seq INTEGER PRIMARY KEY,
            t REAL NOT NULL,
            kind TEXT NOT NULL,
            subject TEXT NOT NULL,
            payload TEXT NOT NULL
        );
        CREATE INDEX knowledge_events_subject ON knowledge_events(subject, seq)
        """,
    ),
    8: (
        "learned models: versioned L2 priors and L3 value models of task families",
        """
        CREATE TABLE learned_models (
            kind TEXT NOT NULL,
            family TEXT NOT NULL,
            version INTEGER NOT NULL,
            model_id TEXT NOT NULL UNIQUE,
            runs TEXT NOT NULL,
            body TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (kind, family, version)
        )
        """,
    ),
    9: (
        "indexes for histories of a million nodes: a run's nodes as replay and spend read "
        "them, and a chain's model calls",
        f"""
        CREATE INDEX nodes_replay ON nodes(run_id, seq, node_id, parent_id, round, status,
            valid, score, raw_score, plan, wall_ms, cpu_ms, tokens_in, tokens_out, money_usd,
            candidate_hash, history_used);
        CREATE INDEX ledger_model_calls ON ledger(chain, seq) WHERE {MODEL_CALLS}
        """,
    ),
}
