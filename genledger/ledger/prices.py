"""The price of a price key: the user's `[prices."MODEL"]`, else genai-prices' (docs/cost.md).

genai-prices (pydantic's price data) ships a snapshot of its table inside the package; genledger
reads that snapshot and never fetches prices at run time. A key's rates are found once through
the library's own `calc_price` (provider and model matching, price history by date, time-of-day
prices, the batch price variant, tiers by input size) and checked against it on a probe usage;
they are remembered (the refresh keeps them in its state dir) per genai-prices version, so a
refresh that meets no new key does not even import the library (that costs half a second).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, time
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from genledger.config import UserPrice
from genledger.ledger.usage import (
    SLOT_S,
    TIER_STARTS,
    USAGE_KEYS,
    USER_FIELDS,
    WHOLE_OF,
    WHOLES,
    band_input,
)

TABLE = "genai-prices"
USER = "user"
# genai-prices' price keys for the billed usage (`ledger.usage.USAGE_KEYS`), in that order:
# `input_tokens` is priced by `input_mtok`
PRICE_KEYS = tuple(key.removesuffix("_tokens") + "_mtok" for key in USAGE_KEYS)
MILLION = Decimal(1_000_000)
THOUSAND = Decimal(1_000)
BATCH = {"processing": "batch"}  # genai-prices' price context of a batch API request
MAX_CACHED = 20_000  # rates remembered per state dir (the file is rewritten past this)
LAYOUT = 2  # of the remembered rates: other layouts are found again


@dataclass(frozen=True)
class Rates:
    """What one price key costs: USD per million tokens of each billed usage (None: not
    priced apart), USD per thousand requests, and where the prices came from."""

    per_million: tuple[Decimal | None, ...]  # in `USAGE_KEYS` order
    per_thousand_requests: Decimal | None
    source: str  # who priced: "provider/model" of the table (its ids), or USER

    def cost(self, usage: list[int] | tuple[int, ...], requests: int) -> Decimal | None:
        """The price of `requests` requests using `usage` (summed, `USAGE_KEYS` order), as
        genai-prices computes it: a part priced apart (cache reads and writes, reasoning) is
        taken out of its whole (input, output); None when the parts exceed their whole."""
        leaves = list(usage)
        for at, whole in enumerate(WHOLE_OF):
            if whole is not None and self.per_million[at] is not None:
                leaves[whole] -= usage[at]
        if any(leaves[at] < 0 for at in WHOLES):
            return None
        total = sum(
            (
                price * count
                for price, count in zip(self.per_million, leaves, strict=True)
                if price is not None
            ),
            start=Decimal(0),
        )
        total /= MILLION
        if self.per_thousand_requests is not None:
            total += self.per_thousand_requests * requests / THOUSAND
        return total

    def to_list(self) -> list[Any]:
        """JSON form (the cache file)."""
        prices = [None if p is None else str(p) for p in self.per_million]
        requests = None if self.per_thousand_requests is None else str(self.per_thousand_requests)
        return [*prices, requests, self.source]

    @classmethod
    def from_list(cls, data: list[Any]) -> Rates:
        """Inverse of `to_list`."""
        *prices, requests, source = data
        if len(prices) != len(PRICE_KEYS):
            raise ValueError("rates of another layout")
        return cls(
            tuple(None if p is None else Decimal(p) for p in prices),
            None if requests is None else Decimal(requests),
            str(source),
        )


def user_rates(price: UserPrice) -> Rates:
    """A user's `[prices."MODEL"]` entry as rates (no reasoning price apart)."""
    given = tuple(None if name is None else getattr(price, name) for name in USER_FIELDS)
    return Rates(tuple(None if p is None else Decimal(str(p)) for p in given), None, USER)


def priced_by(rates: Rates, batch: bool) -> str:
    """Who priced a key, for people: `user`, or the table's `provider/model` (and `batch`)."""
    if rates.source == USER:
        return USER
    return f"{TABLE} {rates.source}" + (" batch" if batch else "")


@cache
def table_version() -> str | None:
    """The installed genai-prices' version (None: not installed)."""
    # Its `.dist-info` folder's name first: importing importlib.metadata (email, zipfile, ...)
    # cost every refresh ~40 ms, a no-op's largest import.
    for entry in sys.path:
        for found in Path(entry or ".").glob("genai_prices-*.dist-info"):
            return found.name.removesuffix(".dist-info").split("-", 1)[1]
    from importlib import metadata

    try:
        return metadata.version("genai-prices")
    except metadata.PackageNotFoundError:
        return None


PriceKey = tuple[str | None, bool, str, int, int]  # provider, batch, model, band, slot


class PriceTable:
    """Rates per price key: the user's prices by model name, else genai-prices' table, found
    once per key; `remembered` (the bytes `dump` gave, kept by the refresh in its state dir)
    saves finding them again."""

    def __init__(self, user: dict[str, UserPrice], remembered: bytes | None = None) -> None:
        self.user = {name: user_rates(price) for name, price in user.items()}
        self.user_folded = {name.casefold(): rates for name, rates in self.user.items()}
        self.version = table_version()
        self.found: dict[str, Rates | None] = _remembered(remembered, self.version)
        self.changed = False

    def user_price(self, model: str | None) -> Rates | None:
        """The user's rates for a model name (exact, else ignoring case)."""
        if model is None:
            return None
        return self.user.get(model) or self.user_folded.get(model.casefold())

    def rates(self, key: PriceKey) -> Rates | None:
        """The table's rates of a price key, or None when it has none for it."""
        text = _cache_key(key)
        if text not in self.found:
            self.found[text] = table_rates(*key) if self.version is not None else None
            self.changed = True
        return self.found[text]

    def dump(self, remembered: bytes | None = None) -> bytes | None:
        """The rates found, to remember, with those `remembered` meanwhile (refreshes of other
        datasets in other processes); None when nothing is new since they were read."""
        if not self.changed:
            return None
        found = {**_remembered(remembered, self.version), **self.found}
        found = dict(list(found.items())[-MAX_CACHED:])
        data = {
            "version": self.version,
            "layout": LAYOUT,
            "rates": {k: None if v is None else v.to_list() for k, v in found.items()},
        }
        return orjson.dumps(data)


def _remembered(raw: bytes | None, version: str | None) -> dict[str, Rates | None]:
    """Rates `PriceTable.dump` wrote under the same table version (else none: absent,
    damaged or of another version, they are found again)."""
    if not raw:
        return {}
    try:
        data = orjson.loads(raw)
        if (data.get("version"), data.get("layout")) != (version, LAYOUT):
            return {}
        return {str(k): None if v is None else Rates.from_list(v) for k, v in data["rates"].items()}
    except (ValueError, KeyError, TypeError, AttributeError, ArithmeticError):
        return {}


def _cache_key(key: PriceKey) -> str:
    provider, batch, model, which, when = key
    return f"{provider or ''}|{int(batch)}|{which}|{when}|{model}"


# --- genai-prices --------------------------------------------------------------------------


def table_rates(
    provider: str | None, batch: bool, model: str, which: int, when: int
) -> Rates | None:
    """genai-prices' rates for `model` under `provider` (else any provider whose models match
    it), its batch price when `batch`, at the start of half-hour slot `when`, in tier band
    `which`; None when the table has no price it can state that way."""
    from genai_prices import Usage

    moment = datetime.fromtimestamp(when * SLOT_S, tz=UTC)
    context = BATCH if batch else None
    probe = _probe(which)
    found = _calc(
        Usage(**dict(zip(USAGE_KEYS, probe, strict=True))), model, provider, moment, context
    )
    if found is None or not _fits_keys(found):
        return None
    rates = _rates(found.model_price, band_input(which), f"{found.provider.id}/{found.model.id}")
    if rates is None:
        return None
    # the rates must price the probe as the library does, or the key is not priced at all
    return rates if rates.cost(probe, 1) == found.total_price else None


def _probe(which: int) -> tuple[int, ...]:
    """A usage inside band `which` with every part non-zero (the input's parts a quarter, an
    eighth...; the output's 111, 55...)."""
    size = max(band_input(which), 1000)
    wholes = {WHOLES[0]: (size, size // 4), WHOLES[1]: (777, 111)}
    nth = dict.fromkeys(WHOLES, 0)
    probe = []
    for at, whole in enumerate(WHOLE_OF):
        if whole is None:
            probe.append(wholes[at][0])
        else:
            probe.append(wholes[whole][1] >> nth[whole])
            nth[whole] += 1
    return tuple(probe)


def _calc(usage: Any, model: str, provider: str | None, moment: datetime, context: Any) -> Any:
    from genai_prices import calc_price

    for provider_id in dict.fromkeys((provider, None)):
        try:
            return calc_price(
                usage,
                model,
                provider_id=provider_id,
                genai_request_timestamp=moment,
                price_context=context,
            )
        except LookupError:
            continue
        except ValueError:
            return None  # the model prices usage in units genledger does not bill
    return None


def _fits_keys(found: Any) -> bool:
    """Whether the model's prices change only where the price keys can tell: tiers at
    `TIER_STARTS`, times of day on the half hour."""
    from genai_prices.types import TimeOfDateConstraint

    model = found.model
    constraints = [p.constraint for p in model.prices] if isinstance(model.prices, list) else []
    constraints += [v.constraint for v in model.price_variants or ()]
    for constraint in constraints:
        if not isinstance(constraint, TimeOfDateConstraint):
            continue
        if not (_on_slot(constraint.start_time) and _on_slot(constraint.end_time)):
            return False
    return True


def _on_slot(moment: time) -> bool:
    utc = datetime.combine(datetime(1970, 1, 1).date(), moment)
    if moment.tzinfo is not None:
        utc = utc.astimezone(UTC)
    seconds = utc.hour * 3600 + utc.minute * 60 + utc.second + utc.microsecond / 1e6
    return math.isclose(seconds % SLOT_S, 0.0)


def _rates(model_price: Any, input_size: int, source: str) -> Rates | None:
    """A resolved model price at one input size: each tiered price at its tier."""
    from genai_prices.types import TieredPrices

    found: list[Decimal | None] = []
    for key in (*PRICE_KEYS, "requests_kcount"):
        price = getattr(model_price, key, None)
        if isinstance(price, TieredPrices):
            if any(tier.start not in TIER_STARTS for tier in price.tiers):
                return None  # a tier the bands cannot tell: never priced at the wrong one
            applicable = price.base
            for tier in reversed(price.tiers):  # the library's cliff: above a start, its rate
                if input_size > tier.start:
                    applicable = tier.price
                    break
            price = applicable
        found.append(price)
    if any(found[at] is None for at in WHOLES):
        return None  # no plain input or output price: a text request cannot be priced
    return Rates(tuple(found[:-1]), found[-1], source)


@cache
def snapshot_note() -> str:
    """Where the table's prices come from, in words."""
    version = table_version()
    return "not installed" if version is None else f"{TABLE} {version}, bundled snapshot"
