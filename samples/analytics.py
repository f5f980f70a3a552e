"""A seeded generator of a realistic running-activity DuckDB database.

The service needs data that looks like a GPS watch export (per-second metrics,
per-km splits, per-activity summaries) so that the LLM-facing tools have something
worth summarising, and so that benchmarks can scale to ten million per-second rows.
Everything is derived from one numpy Generator seeded by `seed`, so the same
(scale, seed) pair always produces byte-identical table contents.

Splits and activities are aggregated from the per-second series with SQL, so the
three tables are consistent with each other (a split's pace is exactly its
seconds divided by its distance).

`scale=1.0` gives 60 activities (about 200k per-second rows, ~2 s to build);
`scale=50` gives about 10 million per-second rows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

ACTIVITIES_PER_SCALE = 60
FIRST_ACTIVITY_ID = 10001
BASE_DAY = np.datetime64("2025-01-06T00:00:00", "s")


@dataclass(frozen=True, slots=True)
class ActivityKind:
    """How one kind of run is paced: base pace (s/km) and duration range (s)."""

    name: str
    label_ja: str
    weight: float
    base_pace: float
    min_duration: int
    max_duration: int


KINDS: tuple[ActivityKind, ...] = (
    ActivityKind("easy_run", "イージーラン", 0.38, 335.0, 2400, 3600),
    ActivityKind("long_run", "ロング走", 0.12, 350.0, 5400, 7800),
    ActivityKind("tempo_run", "テンポ走", 0.15, 288.0, 2700, 3600),
    ActivityKind("intervals", "インターバル走", 0.13, 250.0, 2700, 3300),
    ActivityKind("recovery_run", "リカバリー走", 0.17, 375.0, 1800, 2700),
    ActivityKind("race", "10kmレース", 0.05, 272.0, 2520, 2820),
)

TABLE_COMMENTS = {
    "activities": "One row per run: summary totals and averages (derived from time_series_metrics).",
    "splits": "One row per kilometre of each run (the last split may be shorter than 1 km).",
    "time_series_metrics": "One row per second of each run, as recorded by the watch. Large: filter by activity_id.",
}

COLUMN_COMMENTS = {
    "activities": {
        "activity_id": "Activity id (primary key).",
        "start_time": "Local start time of the run.",
        "activity_type": "easy_run, long_run, tempo_run, intervals, recovery_run or race.",
        "activity_name": "Display name (Japanese).",
        "distance_km": "Total distance in km.",
        "duration_s": "Moving time in seconds.",
        "avg_pace_s_per_km": "Average pace in seconds per km (lower is faster).",
        "avg_hr": "Average heart rate in bpm.",
        "max_hr": "Maximum heart rate in bpm.",
        "avg_cadence_spm": "Average cadence in steps per minute.",
        "avg_ground_contact_time_ms": "Average ground-contact time in ms.",
        "avg_vertical_oscillation_cm": "Average vertical oscillation in cm.",
        "elevation_gain_m": "Total ascent in metres.",
        "calories": "Estimated energy in kcal.",
    },
    "splits": {
        "activity_id": "Activity id (references activities).",
        "split_index": "1-based kilometre number within the activity.",
        "start_time": "Local time the split started.",
        "distance_km": "Split distance in km (1.0 except the last split).",
        "duration_s": "Split time in seconds.",
        "pace_s_per_km": "Split pace in seconds per km (lower is faster).",
        "avg_hr": "Average heart rate in bpm.",
        "max_hr": "Maximum heart rate in bpm.",
        "avg_cadence_spm": "Average cadence in steps per minute.",
        "ground_contact_time_ms": "Average ground-contact time in ms.",
        "vertical_oscillation_cm": "Average vertical oscillation in cm.",
        "elevation_gain_m": "Ascent within the split in metres.",
        "elevation_loss_m": "Descent within the split in metres.",
    },
    "time_series_metrics": {
        "activity_id": "Activity id (references activities).",
        "ts": "Local timestamp of the sample.",
        "elapsed_s": "Seconds since the start of the activity (0-based).",
        "distance_m": "Cumulative distance in metres.",
        "pace_s_per_km": "Instantaneous pace in seconds per km.",
        "heart_rate": "Heart rate in bpm; NULL during optical-sensor dropouts.",
        "cadence_spm": "Cadence in steps per minute.",
        "ground_contact_time_ms": "Ground-contact time in ms (has occasional spikes: form anomalies).",
        "vertical_oscillation_cm": "Vertical oscillation in cm.",
        "elevation_m": "Elevation in metres.",
    },
}


def activity_count(scale: float) -> int:
    """How many activities a scale factor produces (at least one)."""
    return max(1, round(ACTIVITIES_PER_SCALE * scale))


def _pace_profile(kind: ActivityKind, t: np.ndarray, duration: int) -> np.ndarray:
    """Target pace (s/km) for each elapsed second of one activity kind."""
    pace = np.full(t.shape, kind.base_pace)
    if kind.name == "intervals":
        warm, cool = 600, 540
        main = (t >= warm) & (t < duration - cool)
        phase = (t - warm) % 300  # 180 s hard, 120 s jog
        pace = np.where(t < warm, 360.0, pace)
        pace = np.where(main & (phase < 180), kind.base_pace, pace)
        pace = np.where(main & (phase >= 180), 390.0, pace)
        pace = np.where(t >= duration - cool, 370.0, pace)
    elif kind.name == "tempo_run":
        pace = np.where(t < 600, kind.base_pace + 50, pace)
        pace = np.where(t >= duration - 480, kind.base_pace + 60, pace)
    elif kind.name == "long_run":
        pace = pace + 0.004 * t  # fatigue drift
    elif kind.name == "race":
        pace = pace + 6 - 12 * t / duration  # negative split
    return pace


def _ramped(values: np.ndarray, t: np.ndarray, start: float, tau: float) -> np.ndarray:
    """Blend from `start` toward `values` over the first seconds (per activity)."""
    w = np.exp(-t / tau)
    return values * (1 - w) + start * w


def generate_frames(scale: float = 1.0, seed: int = 42) -> dict[str, pd.DataFrame]:
    """Build the per-second series and per-activity metadata as DataFrames."""
    from scipy.signal import lfilter  # here: seconds of import, needed only when sample data is built

    rng = np.random.default_rng(seed)
    n = activity_count(scale)
    weights = np.array([k.weight for k in KINDS])
    kind_idx = rng.choice(len(KINDS), size=n, p=weights / weights.sum())
    durations = np.array(
        [int(rng.integers(KINDS[k].min_duration, KINDS[k].max_duration + 1)) for k in kind_idx], dtype=np.int64
    )
    fitness = rng.normal(0.0, 6.0, size=n)  # per-run form of the day, s/km
    day_offsets = np.floor(np.arange(n) * 1.75).astype(np.int64)
    evening = rng.random(n) < 0.35
    minute_of_day = np.where(evening, rng.integers(18 * 60 + 30, 20 * 60, n), rng.integers(6 * 60, 7 * 60 + 30, n))
    starts = BASE_DAY + (day_offsets * 86400 + minute_of_day * 60).astype("timedelta64[s]")

    total = int(durations.sum())
    act = np.repeat(np.arange(n), durations)
    offsets = np.concatenate([[0], np.cumsum(durations)[:-1]])
    t = np.arange(total) - np.repeat(offsets, durations)

    pace = np.empty(total)
    for i in range(n):
        sl = slice(offsets[i], offsets[i] + durations[i])
        pace[sl] = _pace_profile(KINDS[kind_idx[i]], t[sl].astype(float), int(durations[i]))
    pace += fitness[act]

    phase1, phase2 = rng.uniform(0, 2 * np.pi, n), rng.uniform(0, 2 * np.pi, n)
    period1, period2 = rng.uniform(600, 1500, n), rng.uniform(150, 400, n)
    amp1, amp2 = rng.uniform(3, 25, n), rng.uniform(0.5, 4, n)
    base_elev = rng.uniform(30, 90, n)
    elev = (
        base_elev[act]
        + amp1[act] * np.sin(2 * np.pi * t / period1[act] + phase1[act])
        + amp2[act] * np.sin(2 * np.pi * t / period2[act] + phase2[act])
    )
    climb = np.gradient(elev)  # metres per second
    pace += 60.0 * climb  # uphill slows you down
    pace += lfilter([1.0], [1.0, -0.97], rng.normal(0, 1.2, total))  # smooth wander
    pace = np.clip(pace, 200.0, 600.0)

    speed = 1000.0 / pace
    dist = np.cumsum(speed)
    dist -= np.repeat(dist[offsets] - speed[offsets], durations)

    hr_target = 58 + 27 * speed + 0.0025 * t + 120 * np.clip(climb, 0, None)
    hr = lfilter([0.04], [1.0, -0.96], hr_target - 140) + 140  # ~25 s lag
    hr = _ramped(hr, t, 95.0, 45.0) + rng.normal(0, 1.5, total)
    hr = np.clip(np.round(hr), 80, 205)
    dropout = np.zeros(total, dtype=bool)
    for s in rng.choice(total, size=max(1, total // 4000), replace=False):
        dropout[s : s + int(rng.integers(5, 25))] = True

    cadence = np.round(148 + 8.5 * speed + rng.normal(0, 1.8, total))
    gct = 335 - 26 * speed + lfilter([1.0], [1.0, -0.8], rng.normal(0, 2.0, total))
    for i in range(n):  # form anomalies: ground-contact time spikes of 8-20 s
        for _ in range(int(rng.integers(0, 4))):
            s = offsets[i] + int(rng.integers(300, durations[i] - 60))
            gct[s : s + int(rng.integers(8, 21))] += rng.uniform(40, 75)
    vo = 6.4 + 0.65 * speed + rng.normal(0, 0.25, total)

    ts = pd.DataFrame(
        {
            "activity_id": (FIRST_ACTIVITY_ID + act).astype(np.int64),
            "ts": np.repeat(starts, durations) + t.astype("timedelta64[s]"),
            "elapsed_s": t.astype(np.int32),
            "distance_m": np.round(dist, 1),
            "pace_s_per_km": np.round(pace, 1),
            "heart_rate": hr,
            "hr_missing": dropout,
            "cadence_spm": cadence.astype(np.int16),
            "ground_contact_time_ms": np.round(gct, 1),
            "vertical_oscillation_cm": np.round(vo, 2),
            "elevation_m": np.round(elev, 1),
        }
    )
    meta = pd.DataFrame(
        {
            "activity_id": (FIRST_ACTIVITY_ID + np.arange(n)).astype(np.int64),
            "start_time": starts,
            "activity_type": [KINDS[k].name for k in kind_idx],
            "activity_name": [KINDS[k].label_ja for k in kind_idx],
        }
    )
    return {"ts": ts, "meta": meta}


_BUILD_SQL = [
    """CREATE TABLE time_series_metrics AS
       SELECT activity_id, CAST(ts AS TIMESTAMP) AS ts, elapsed_s, distance_m, pace_s_per_km,
              CASE WHEN hr_missing THEN NULL ELSE CAST(heart_rate AS SMALLINT) END AS heart_rate,
              cadence_spm, ground_contact_time_ms, vertical_oscillation_cm, elevation_m
       FROM ts_df ORDER BY activity_id, elapsed_s""",
    """CREATE TABLE splits AS
       WITH d AS (
         SELECT *, CAST(floor(distance_m / 1000) AS INTEGER) + 1 AS split_index,
                elevation_m - lag(elevation_m) OVER (PARTITION BY activity_id ORDER BY elapsed_s) AS delev
         FROM time_series_metrics)
       SELECT activity_id, split_index, min(ts) AS start_time,
              round((max(distance_m) - (split_index - 1) * 1000) / 1000, 3) AS distance_km,
              CAST(count(*) AS INTEGER) AS duration_s,
              round(count(*) / ((max(distance_m) - (split_index - 1) * 1000) / 1000), 1) AS pace_s_per_km,
              CAST(round(avg(heart_rate)) AS SMALLINT) AS avg_hr,
              max(heart_rate) AS max_hr,
              CAST(round(avg(cadence_spm)) AS SMALLINT) AS avg_cadence_spm,
              round(avg(ground_contact_time_ms), 1) AS ground_contact_time_ms,
              round(avg(vertical_oscillation_cm), 2) AS vertical_oscillation_cm,
              round(sum(greatest(delev, 0)), 1) AS elevation_gain_m,
              round(sum(greatest(-delev, 0)), 1) AS elevation_loss_m
       FROM d GROUP BY activity_id, split_index
       HAVING max(distance_m) - (split_index - 1) * 1000 >= 100
       ORDER BY activity_id, split_index""",
    """CREATE TABLE activities AS
       WITH agg AS (
         SELECT activity_id, max(distance_m) / 1000 AS km, CAST(count(*) AS INTEGER) AS duration_s,
                avg(heart_rate) AS avg_hr, max(heart_rate) AS max_hr, avg(cadence_spm) AS cad,
                avg(ground_contact_time_ms) AS gct, avg(vertical_oscillation_cm) AS vo
         FROM time_series_metrics GROUP BY activity_id),
       gain AS (SELECT activity_id, sum(elevation_gain_m) AS g FROM splits GROUP BY activity_id)
       SELECT m.activity_id, CAST(m.start_time AS TIMESTAMP) AS start_time, m.activity_type, m.activity_name,
              round(a.km, 2) AS distance_km, a.duration_s,
              round(a.duration_s / a.km, 1) AS avg_pace_s_per_km,
              CAST(round(a.avg_hr) AS SMALLINT) AS avg_hr, a.max_hr,
              CAST(round(a.cad) AS SMALLINT) AS avg_cadence_spm,
              round(a.gct, 1) AS avg_ground_contact_time_ms,
              round(a.vo, 2) AS avg_vertical_oscillation_cm,
              round(g.g, 1) AS elevation_gain_m,
              CAST(round(a.km * 62 * 1.03) AS INTEGER) AS calories
       FROM meta_df m JOIN agg a USING (activity_id) LEFT JOIN gain g USING (activity_id)
       ORDER BY m.activity_id""",
]


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def build_database(out: Path, scale: float = 1.0, seed: int = 42) -> dict[str, int]:
    """Write a fresh database to `out` atomically; return row counts per table.

    The file is built under a temporary name in the same directory and renamed,
    so a concurrent reader never sees a half-written database. The connection is
    closed before returning: the service later opens the file read-only, and
    DuckDB refuses a read-only and a read-write connection to one file in one process.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    for stale in (tmp, tmp.with_name(tmp.name + ".wal")):
        stale.unlink(missing_ok=True)
    frames = generate_frames(scale, seed)
    try:
        counts = _write(tmp, frames)
    except BaseException:
        for partial in (tmp, tmp.with_name(tmp.name + ".wal")):  # a full disk must not keep a half database
            partial.unlink(missing_ok=True)
        raise
    os.replace(tmp, out)
    return counts


def _write(tmp: Path, frames: dict[str, pd.DataFrame]) -> dict[str, int]:
    con = duckdb.connect(str(tmp))
    try:
        con.register("ts_df", frames["ts"])
        con.register("meta_df", frames["meta"])
        for sql in _BUILD_SQL:
            con.execute(sql)
        con.unregister("ts_df")
        con.unregister("meta_df")
        for table, comment in TABLE_COMMENTS.items():
            con.execute(f"COMMENT ON TABLE {table} IS {_sql_string(comment)}")
            for column, text in COLUMN_COMMENTS[table].items():
                con.execute(f"COMMENT ON COLUMN {table}.{column} IS {_sql_string(text)}")
        counts = {t: int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]) for t in TABLE_COMMENTS}
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return counts


def ensure_database(path: Path, scale: float = 1.0, seed: int = 42) -> bool:
    """Generate the database at `path` when it is missing; True if it was built now."""
    if Path(path).exists():
        return False
    build_database(Path(path), scale=scale, seed=seed)
    return True
