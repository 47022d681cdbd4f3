"""The sessions table's per-kind counts come from ``packets.layout.PacketKind``: one column per
kind of an open session ([MS-MQQB] 3.1.5.5-3.1.5.8), named after the kind, in the rows and in the
Parquet schema alike -- so a new packet kind needs no change in the pipeline, and the columns of
today's kinds keep their names and places."""

from __future__ import annotations

from collections import Counter
from enum import StrEnum
from pathlib import Path

from pipeline_helpers import capture

from harness.pipeline.flows import KIND_COLUMNS, OPEN_SESSION_KINDS, count_column, open_session_kinds, process_local
from harness.pipeline.tasks import SCHEMAS, _arrow_schema
from packets.layout import SESSION_KINDS, PacketKind


def test_the_columns_of_todays_kinds_keep_their_names_and_order() -> None:
    assert list(KIND_COLUMNS.items())[:4] == [
        ("UserMessage", "user_messages"),
        ("SessionAck", "session_acks"),
        ("OrderAck", "order_acks"),
        ("FinalAck", "final_acks"),
    ]
    names = [name for name, _type in SCHEMAS["sessions"]]
    at = names.index("packets_server") + 1
    assert names[at : at + len(KIND_COLUMNS)] == list(KIND_COLUMNS.values())
    assert names[at + len(KIND_COLUMNS)] == "gaps"
    assert all(dict(SCHEMAS["sessions"])[c] == "long" for c in KIND_COLUMNS.values())
    assert _arrow_schema("sessions").names == names


def test_every_kind_of_an_open_session_is_counted_and_no_other() -> None:
    establishment = {PacketKind.EstablishConnection, PacketKind.ConnectionParameters}
    assert set(OPEN_SESSION_KINDS) == set(SESSION_KINDS) - establishment
    assert set(KIND_COLUMNS) == {k.name for k in OPEN_SESSION_KINDS}
    assert all(KIND_COLUMNS[k.name] == count_column(k.name) for k in OPEN_SESSION_KINDS)


class _Extended(StrEnum):
    """A packet kind the spec might add (for the derivation only)."""

    BatchAck = "BatchAck"


def test_a_new_kind_gets_its_column_from_its_name() -> None:
    kinds = open_session_kinds([*SESSION_KINDS, _Extended.BatchAck])
    assert kinds == (*OPEN_SESSION_KINDS, _Extended.BatchAck)
    assert count_column(_Extended.BatchAck.name) == "batch_acks"
    assert count_column(PacketKind.SessionAck.name) == "session_acks"


def test_each_session_row_counts_the_packets_of_each_kind(tmp_path: Path) -> None:
    path, _manifest = capture(tmp_path, sessions=8, rate=0.0, seed=5)
    tables, _counts = process_local([str(path)])
    per_flow: dict[str, Counter[str]] = {}
    for row in tables["packets"]:
        per_flow.setdefault(row["flow"], Counter())[row["kind"]] += 1
    assert len(tables["sessions"]) == 8
    counted = Counter[str]()
    for session in tables["sessions"]:
        kinds = per_flow[session["flow"]]
        for kind, column in KIND_COLUMNS.items():
            assert session[column] == kinds[kind], (session["flow"], column)
            counted[kind] += session[column]
    assert counted["UserMessage"] > 0 and counted["SessionAck"] > 0
