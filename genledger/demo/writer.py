"""The demo's writer: lays out a run's datasets and appends records at a realistic pace.

Like a real pipeline it sometimes flushes half a line (a torn write); the other half follows
on the next write, so readers see pending bytes come and go.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from pathlib import Path

from genledger.synth.records import WRITERS, line, tokenized

RESPONSES, TOKENIZED = "raw_responses.jsonl", "tokenized_data.jsonl"


@dataclass(frozen=True)
class DemoDataset:
    """One simulated dataset: its folder name, size and which format each record is written in."""

    name: str
    n_prompts: int
    file: str = RESPONSES
    kinds: tuple[tuple[float, str], ...] = ((1.0, "openai_chat"),)  # (until fraction, writer)
    leak_every: int = 0  # every n-th record leaks a </think> (0: never)
    prompts: bool = True

    def kind(self, index: int) -> str:
        """The generator of record `index`: the format switches at the given fractions."""
        if self.leak_every and index % self.leak_every == self.leak_every - 1:
            return "think_leak"
        fraction = index / max(self.n_prompts, 1)
        return next((k for until, k in self.kinds if fraction < until), self.kinds[-1][1])


def demo_plan(n_prompts: int = 600) -> list[DemoDataset]:
    """The demo datasets: a format switch, think-tag leaks, the seed's bug, pre-tokenized data."""
    return [
        DemoDataset("B2_opencodeinstruct", n_prompts, kinds=((0.5, "openai_chat"), (1.0, "flat"))),
        DemoDataset(
            "C3 math-reasoning.v2",
            n_prompts,
            kinds=((1.0, "sglang_generate"),),
            leak_every=max(2, n_prompts // 8),
        ),
        DemoDataset("D4_seed_bug", n_prompts, kinds=((1.0, "no_tokens"),)),
        DemoDataset("E5_batch_api", n_prompts // 2, kinds=((1.0, "openai_batch"),)),
        DemoDataset("A1_pretokenized", n_prompts, file=TOKENIZED, prompts=False),
    ]


@dataclass
class _Progress:
    written: int = 0
    carry: bytes = b""  # the rest of a torn line, written first next time


@dataclass
class DemoWriter:
    """Appends records to the datasets of `plan` under `root`."""

    root: Path
    plan: list[DemoDataset]
    seed: int = 7
    torn_probability: float = 0.15
    progress: dict[str, _Progress] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.progress = {ds.name: _Progress() for ds in self.plan}

    def setup(self, prefill: float = 0.05) -> None:
        """Create the dataset folders and prompts files, and write the first few records."""
        for ds in self.plan:
            folder = self.root / ds.name
            folder.mkdir(parents=True, exist_ok=True)
            if ds.prompts:
                (folder / "prompts.jsonl").write_bytes(
                    b"".join(
                        line({"id": f"{ds.name}-{i}", "prompt": "Solve it."})
                        for i in range(ds.n_prompts)
                    )
                )
            (folder / ds.file).touch()
            self._append(ds, max(1, int(ds.n_prompts * prefill)), torn=False)

    @property
    def finished(self) -> bool:
        """Every dataset has all its records, no torn line left."""
        return all(
            self.progress[ds.name].written >= ds.n_prompts and not self.progress[ds.name].carry
            for ds in self.plan
        )

    def step(self, records: int) -> int:
        """Append up to `records` records spread over the unfinished datasets; returns how many."""
        active = [ds for ds in self.plan if self.progress[ds.name].written < ds.n_prompts]
        written = 0
        for i in range(records):
            if not active:
                break
            ds = active[i % len(active)]
            written += self._append(ds, 1, torn=True)
            if self.progress[ds.name].written >= ds.n_prompts:
                active.remove(ds)
        for ds in self.plan:
            if self.progress[ds.name].written >= ds.n_prompts and self.progress[ds.name].carry:
                self._write(ds, b"")
        return written

    def _record(self, ds: DemoDataset, index: int) -> bytes:
        prompt, completion = self.rng.randint(20, 400), self.rng.randint(30, 1200)
        if ds.file == TOKENIZED:
            return line(tokenized(prompt, completion, self.rng))
        writer = WRITERS[ds.kind(index)]
        return line(writer(f"{ds.name}-{index}", prompt, completion, self.rng))

    def _append(self, ds: DemoDataset, count: int, torn: bool) -> int:
        state = self.progress[ds.name]
        count = min(count, ds.n_prompts - state.written)
        data = b"".join(self._record(ds, state.written + i) for i in range(count))
        state.written += count
        self._write(ds, data, torn=torn)
        return count

    def _write(self, ds: DemoDataset, data: bytes, torn: bool = False) -> None:
        state = self.progress[ds.name]
        data, state.carry = state.carry + data, b""
        if torn and len(data) > 2 and self.rng.random() < self.torn_probability:
            cut = self.rng.randint(1, len(data) - 1)
            data, state.carry = data[:cut], data[cut:]
        with (self.root / ds.name / ds.file).open("ab") as handle:
            handle.write(data)

    def run(self, stop: threading.Event, rate: float, tick_s: float = 0.25) -> None:
        """Write about `rate` records per second until `stop` is set or the run is complete."""
        budget = 0.0
        while not stop.is_set() and not self.finished:
            budget += rate * tick_s
            whole = int(budget)
            budget -= whole
            self.step(whole)
            stop.wait(tick_s)
