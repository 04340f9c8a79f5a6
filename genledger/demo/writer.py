"""The demo's writer: lays out a run's datasets and appends records at a realistic pace.

Like a real pipeline it sometimes flushes half a line (a torn write); the other half follows
on the next write, so readers see pending bytes come and go.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from pathlib import Path

from genledger.synth.records import WRITERS, line, openai_chat, tokenized

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
    # run health: from this fraction on, `truncate_every`-th records stop at the limit
    truncate_from: float = 1.0
    truncate_every: int = 0
    repeat_every: int = 0  # every n-th record repeats an earlier answer (0: never)
    unmasked_every: int = 0  # every n-th tokenized sample trains on its prompt (0: never)
    skip_every: int = 0  # every n-th prompt never gets a response (0: none is skipped)

    def kind(self, index: int) -> str:
        """The generator of record `index`: the format switches at the given fractions."""
        if self.leak_every and index % self.leak_every == self.leak_every - 1:
            return "think_leak"
        fraction = index / max(self.n_prompts, 1)
        return next((k for until, k in self.kinds if fraction < until), self.kinds[-1][1])


DEMO_WINDOW = 100  # `[health] window` of the demo's config: drift shows within minutes


def demo_plan(n_prompts: int = 600) -> list[DemoDataset]:
    """The demo datasets: a format switch, think-tag leaks, the seed's bug, pre-tokenized data;
    and the run-health ones: truncation that rises mid-run, repeated answers, unmasked prompts
    (with prompts that never ran)."""
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
        DemoDataset("F6_truncation_rises", n_prompts, truncate_from=0.5, truncate_every=3),
        DemoDataset("G7_repeated_answers", n_prompts, repeat_every=4, skip_every=10),
        DemoDataset(
            "H8_unmasked_prompts", n_prompts, file=TOKENIZED, prompts=False, unmasked_every=5
        ),
    ]


def _prompt(ds: DemoDataset, index: int) -> int:
    """The prompt the `index`-th response answers: with `skip_every`, some prompts are
    skipped (they never ran: `genledger missing` lists them)."""
    if not ds.skip_every:
        return index
    return index + index // (ds.skip_every - 1)


def prompt_count(ds: DemoDataset) -> int:
    """Prompts the dataset's prompts file holds (more than responses when some are skipped)."""
    return _prompt(ds, ds.n_prompts - 1) + 1 if ds.skip_every else ds.n_prompts


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
                        for i in range(prompt_count(ds))
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
            sample = tokenized(prompt, completion, self.rng)
            if ds.unmasked_every and index % ds.unmasked_every == 0:
                sample["loss_mask"] = [1] * len(sample["loss_mask"])  # the prompt is trained on
            return line(sample)
        rid = f"{ds.name}-{_prompt(ds, index)}"
        if ds.truncate_every or ds.repeat_every:
            return line(self._health_record(ds, index, rid, prompt, completion))
        writer = WRITERS[ds.kind(index)]
        return line(writer(rid, prompt, completion, self.rng))

    def _health_record(
        self, ds: DemoDataset, index: int, rid: str, prompt: int, completion: int
    ) -> dict[str, object]:
        """A chat completion that may stop at the limit, or repeat the first answer."""
        late = index >= ds.truncate_from * ds.n_prompts
        if ds.truncate_every and late and index % ds.truncate_every == 0:
            return openai_chat(rid, prompt, 4096, self.rng, finish_reason="length")
        if ds.repeat_every and index % ds.repeat_every == ds.repeat_every - 1:
            return openai_chat(
                rid, prompt, completion, self.rng, content="I cannot help with that."
            )
        return openai_chat(rid, prompt, completion, self.rng)

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
