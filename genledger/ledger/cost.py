"""What the run has cost and will cost: a dataset's `models`, `cost_usd`, `cost_projected_usd`,
`cost_unpriced` and `prices`, and the same over all datasets (docs/cost.md).

The books keep, per file, the usage of its records per price key (model, format, tier band,
half-hour slot: `ledger.usage`). Here each key is priced once — the user's price for its model,
else the price table's (`ledger.prices`) for the format's provider and batch API — and a record
of a self-hosted format (`parse.declarations.SELF_HOSTED`) without a user price goes to the
fleet, whose GPU-hours are shared among datasets and models by their generated tokens. A
record nobody prices is never a zero: it is counted in `cost_unpriced`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from genledger.config import Config, FleetSettings
from genledger.ledger.books import GROUP_FIELDS
from genledger.ledger.prices import TABLE, PriceTable, priced_by, table_version
from genledger.ledger.records import FileState
from genledger.ledger.stats import iso_utc
from genledger.ledger.usage import USAGE_KEYS, priced_usage, slot
from genledger.parse.buckets import BUCKETS, SIDE, SIDES
from genledger.parse.declarations import SELF_HOSTED, FormatSet

GROUP: str = "models"  # the books' `Priced` entry the cost reads
FIELDS = GROUP_FIELDS[GROUP]
OUTPUT_AT = USAGE_KEYS.index(SIDE["output"].price)
UNNAMED = "(unnamed)"
FLEET = "fleet"
# The per-model numbers of `models`: (stat, sum of the price key, known-count sum or None);
# the same sums as the dataset's own, so its models add up to it.
MODEL_STATS: tuple[tuple[str, str, str | None], ...] = (
    ("n_done", "records", None),
    *((side.stat, side.stat, None) for side in reversed(SIDES)),  # output's first
    *((b.stat, b.stat, b.known) for b in BUCKETS if b.by_model),  # `parse.buckets`
)
SUMMED = tuple(dict.fromkeys(n for _, s, k in MODEL_STATS for n in (s, k) if n is not None))


@dataclass
class Costing:
    """What a refresh prices with: the price table, the fleet, the formats in force."""

    table: PriceTable
    fleet: FleetSettings
    formats: FormatSet
    models: Mapping[str, str] = field(default_factory=dict)  # dataset -> its records' model
    providers: Mapping[str, str] = field(default_factory=dict)  # dataset -> its provider

    @classmethod
    def of(cls, config: Config, remembered: bytes | None = None) -> Costing:
        """The costing of a configuration (`remembered`: rates found by earlier refreshes)."""
        return cls(PriceTable(config.prices, remembered), config.fleet, config.format_set,
                   config.models, config.providers)  # fmt: skip


@dataclass
class ModelCost:
    """One model's numbers in one dataset."""

    sums: Counter[str] = field(default_factory=Counter)
    usd: Decimal | None = None  # priced records' cost (the fleet's share added later)
    fleet_tokens: int = 0  # generated tokens of records the fleet prices
    fleet_records: int = 0
    priced_by: set[str] = field(default_factory=set)  # who priced its records


@dataclass
class DatasetCost:
    """A dataset's cost before the fleet is shared: per model, what was priced, what not."""

    models: dict[str, ModelCost] = field(default_factory=dict)
    unpriced_records: int = 0
    unpriced_models: set[str] = field(default_factory=set)
    user_models: set[str] = field(default_factory=set)
    fleet_first: float | None = None  # the earliest write of a file with fleet records
    fleet_last: float | None = None  # the latest
    fleet_share: Decimal | None = None  # set once the fleet is shared

    @property
    def fleet_tokens(self) -> int:
        """Generated tokens of the dataset's records the fleet prices."""
        return sum(m.fleet_tokens for m in self.models.values())

    @property
    def fleet_records(self) -> int:
        """Records the fleet prices."""
        return sum(m.fleet_records for m in self.models.values())

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (before the fleet is shared), kept for a quiet refresh
        (`refresh.quiet`); Decimals as text, so they come back exactly."""
        return {
            "models": {
                name: [
                    dict(m.sums),
                    _text(m.usd),
                    m.fleet_tokens,
                    m.fleet_records,
                    sorted(m.priced_by),
                ]
                for name, m in self.models.items()
            },
            "unpriced_records": self.unpriced_records,
            "unpriced_models": sorted(self.unpriced_models),
            "user_models": sorted(self.user_models),
            "fleet_first": self.fleet_first,
            "fleet_last": self.fleet_last,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DatasetCost:
        """Inverse of `to_dict`; raises ValueError, KeyError or TypeError on a damaged form."""
        models = {}
        for name, (sums, usd, tokens, records, by) in data["models"].items():
            usd_value = None if usd is None else Decimal(usd)
            models[name] = ModelCost(Counter(sums), usd_value, int(tokens), int(records), set(by))
        return cls(models, int(data["unpriced_records"]), set(data["unpriced_models"]),
                   set(data["user_models"]), data["fleet_first"], data["fleet_last"])  # fmt: skip


def _text(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def costing_key(config: Config) -> str:
    """Everything besides the files that decides a dataset's cost: the user's prices, the
    fleet, the models and providers named, the formats and the price table's version."""
    parts = (
        sorted(config.prices.items()),
        config.fleet,
        sorted(config.models.items()),
        sorted(config.providers.items()),
        config.format_set.signature(),
        table_version(),
    )
    return hashlib.blake2b(repr(parts).encode(), digest_size=10).hexdigest()


def dataset_cost(
    name: str, files: Iterable[FileState], costing: Costing, now: float
) -> DatasetCost:
    """Price a dataset's responses files, key by key (the fleet's share comes later)."""
    cost = DatasetCost()
    default_model = costing.models.get(name)
    provider = costing.providers.get(name)
    for state in files:
        keys = state.tally.group(GROUP)
        if not keys:
            continue
        when = state.mtime if state.mtime is not None else now  # undated records: file time
        for (model, fmt, which, at), values in keys.items():
            named = model or default_model
            entry = cost.models.setdefault(named or UNNAMED, ModelCost())
            sums = dict(zip(FIELDS, values, strict=True))
            entry.sums.update({f: sums[f] for f in SUMMED})
            usage = priced_usage(sums)
            found, batch = costing.formats.priced_as(fmt)
            key = (provider or found, batch, named, which, slot(when) if at is None else at)
            # a record of no known format has no usage to price: never a zero
            priced = _price(cost, costing, key, usage, sums["records"], entry) if fmt else None
            if isinstance(priced, Decimal):
                entry.usd = priced if entry.usd is None else entry.usd + priced
            elif priced == FLEET:
                entry.fleet_tokens += usage[OUTPUT_AT]
                entry.fleet_records += values[0]
                cost.fleet_first = _earlier(cost.fleet_first, when)
                cost.fleet_last = _later(cost.fleet_last, when)
            else:
                cost.unpriced_records += values[0]
                cost.unpriced_models.add(named or UNNAMED)
    return cost


def _price(
    cost: DatasetCost,
    costing: Costing,
    key: tuple[str | None, bool, str | None, int, int],
    usage: tuple[int, ...],
    records: int,
    entry: ModelCost,
) -> Decimal | str | None:
    """A key's price (provider, batch, model, band, slot); FLEET when the fleet prices it;
    None when nobody does."""
    provider, batch, model, which, when = key
    rates = costing.table.user_price(model)
    if rates is not None:
        cost.user_models.add(model or UNNAMED)
    elif provider == SELF_HOSTED:
        return FLEET if costing.fleet.gpu_hour_usd is not None else None
    elif model is not None:
        rates = costing.table.rates((provider, batch, model, which, when))
    if rates is None:
        return None
    entry.priced_by.add(priced_by(rates, batch))
    return rates.cost(usage, records)


def _earlier(a: float | None, b: float) -> float:
    return b if a is None else min(a, b)


def _later(a: float | None, b: float) -> float:
    return b if a is None else max(a, b)


# --- the fleet ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fleet:
    """The fleet's cost so far: its GPU-hours from the first write of a file holding its
    records to the last, at its price."""

    gpu_hour_usd: float
    gpus: int
    first: float
    last: float
    tokens: int  # generated tokens of every dataset's fleet records (the shares' whole)
    records: int

    @property
    def hours(self) -> float:
        """Hours from the first write to the last."""
        return max(0.0, self.last - self.first) / 3600

    @property
    def usd(self) -> Decimal:
        """GPU-hours times the price."""
        return Decimal(str(self.gpu_hour_usd)) * self.gpus * Decimal(str(self.hours))

    def share(self, tokens: int, records: int) -> Decimal:
        """The part of the cost of `tokens` generated tokens (by records, when none
        generated any)."""
        if self.tokens:
            return self.usd * tokens / self.tokens
        return self.usd * records / self.records if self.records else Decimal(0)

    def block(self) -> dict[str, Any]:
        """`prices.fleet` of the stats JSON."""
        return {
            "gpu_hour_usd": self.gpu_hour_usd,
            "gpus": self.gpus,
            "hours": self.hours,
            "first_write": iso_utc(self.first),
            "last_write": iso_utc(self.last),
        }


def fleet_of(settings: FleetSettings, costs: Iterable[DatasetCost]) -> Fleet | None:
    """The fleet over datasets' costs (None without a fleet or its records)."""
    found = [c for c in costs if c.fleet_records]
    if settings.gpu_hour_usd is None or not found:
        return None
    return Fleet(
        settings.gpu_hour_usd,
        settings.gpus,
        min(c.fleet_first for c in found if c.fleet_first is not None),
        max(c.fleet_last for c in found if c.fleet_last is not None),
        sum(c.fleet_tokens for c in found),
        sum(c.fleet_records for c in found),
    )


def share_fleet(fleet: Fleet | None, costs: Iterable[DatasetCost]) -> None:
    """Add each model's share of the fleet's cost to its priced cost. A fleet whose records
    were all written at one moment has no hours to go by: its records are unpriced, not free."""
    if fleet is None:
        return
    for cost in costs:
        for name, entry in cost.models.items():
            if not entry.fleet_records:
                continue
            if not fleet.hours:
                cost.unpriced_records += entry.fleet_records
                cost.unpriced_models.add(name)
                continue
            part = fleet.share(entry.fleet_tokens, entry.fleet_records)
            entry.usd = part if entry.usd is None else entry.usd + part
            entry.priced_by.add(FLEET)


# --- the stats JSON ----------------------------------------------------------------------------


def _usd(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def _model_block(entry: ModelCost) -> dict[str, Any]:
    block: dict[str, Any] = {}
    for stat, summed, known in MODEL_STATS:
        block[stat] = None if known is not None and not entry.sums[known] else entry.sums[summed]
    block["cost_usd"] = _usd(entry.usd)
    block["priced_by"] = sorted(entry.priced_by)
    return block


def cost_fields(
    cost: DatasetCost | None, n_done: int, n_prompts: int | None, fleet: Fleet | None
) -> dict[str, Any]:
    """`models`, `cost_usd`, `cost_projected_usd`, `cost_unpriced` and `prices` of a block."""
    models = {} if cost is None else {m: cost.models[m] for m in sorted(cost.models)}
    spent = [m.usd for m in models.values() if m.usd is not None]
    total = sum(spent, start=Decimal(0)) if spent else None
    projected = None
    if total is not None and n_done and n_prompts is not None:
        projected = total / n_done * n_prompts
    has_fleet = cost is not None and cost.fleet_records > 0
    return {
        "models": {name: _model_block(entry) for name, entry in models.items()},
        "cost_usd": _usd(total),
        "cost_projected_usd": _usd(projected),
        "cost_unpriced": {
            "n_records": 0 if cost is None else cost.unpriced_records,
            "models": [] if cost is None else sorted(cost.unpriced_models),
        },
        "prices": prices_block(
            [] if cost is None else sorted(cost.user_models), fleet if has_fleet else None
        ),
    }


def prices_block(user_models: list[str], fleet: Fleet | None) -> dict[str, Any]:
    """Where the prices came from: the table's version, the models the user priced, the
    fleet."""
    return {
        "table": TABLE,
        "version": table_version(),
        "snapshot": "bundled with the package (never fetched)",
        "user": user_models,
        "fleet": None if fleet is None else fleet.block(),
    }


def total_fields(blocks: list[dict[str, Any]], fleet: Fleet | None) -> dict[str, Any]:
    """The cost fields of the totals: models merged, costs and projections summed."""
    models: dict[str, dict[str, Any]] = {}
    for block in blocks:
        for name, entry in (block.get("models") or {}).items():
            mine = models.setdefault(name, {})
            for key, value in entry.items():
                if isinstance(value, list):
                    mine[key] = sorted({*mine.get(key, []), *value})
                elif value is not None:
                    mine[key] = value if mine.get(key) is None else mine[key] + value
                else:
                    mine.setdefault(key, None)
    costs = [b["cost_usd"] for b in blocks if b.get("cost_usd") is not None]
    with_cost = [b for b in blocks if b.get("cost_usd") is not None]
    projected = [b.get("cost_projected_usd") for b in with_cost]
    unpriced = [b.get("cost_unpriced") or {} for b in blocks]
    users = sorted({m for b in blocks for m in (b.get("prices") or {}).get("user", [])})
    return {
        "models": dict(sorted(models.items())),
        "cost_usd": sum(costs) if costs else None,
        "cost_projected_usd": sum(projected) if projected and None not in projected else None,
        "cost_unpriced": {
            "n_records": sum(u.get("n_records", 0) for u in unpriced),
            "models": sorted({m for u in unpriced for m in u.get("models", [])}),
        },
        "prices": prices_block(users, fleet),
    }
