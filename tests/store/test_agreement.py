"""SqliteRunStore and MemoryRunStore agree under random operations (a Hypothesis state
machine, ``dreamrsi.testing.store_agreement``)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

from dreamrsi.testing.store_agreement import StoreAgreement

TestStoreAgreement = StoreAgreement.TestCase
TestStoreAgreement.settings = settings(
    max_examples=40, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
