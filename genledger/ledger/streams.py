"""The streams of a stretch of a file: the requests its events assemble into, as a mergeable
partial (`a + b` equals reading a's lines then b's), kept in the file's tally.

Within a stretch, events are read in one pass (`StreamState.feed`). What a stretch cannot
settle alone waits for the stretch before it: a request whose first event here is no start
event may continue one begun earlier (a head), and a request still open at the end may
continue later (open). A stretch that begins at the file's start is anchored: nothing came
before it. Open requests travel in the state file until the file settles
(`StreamState.settle`): then each is one request, an unfinished one failed with
`parse.streams.INCOMPLETE`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from genledger.parse.streams import (
    BY_NAME,
    Acc,
    Event,
    Family,
    closer_families,
    combine,
    combine_into,
    fold,
    is_end,
    read_event,
)

ENDED_KEPT = 8  # requests an error ended whose closing event may still come, the latest kept
ANY = "*"  # a head that is an error record: it ends whichever stream was open before it
Key = tuple[str, str | None]


@dataclass
class Partial:
    """One request being assembled: its family, grouping id, fold and where it ended."""

    family: str
    key: str | None
    acc: Acc
    line: int
    offset: int
    finished: bool = False  # its finish reason came: it ends at the next event not its own
    unanchored: bool = False  # its first event here may continue a request begun before
    started: bool = False  # begun by its family's start event
    trailing_first: bool = False  # its first event was usage after a finish
    closed: bool = False
    incomplete: bool = False
    opened: bool = True  # its first event may begin a request (`Family.opener`)
    absorbed: bool = False  # the closing event of a request an error already ended

    @property
    def ends_early(self) -> bool:
        """A finished request ends at the next event not its own when it has no id (nothing
        else could be its own) or already has its usage; one with an id still waiting for its
        usage chunk waits (interleaved streams), or the file settling."""
        return self.key is None or "u" in self.acc

    def to_list(self) -> list[Any]:
        """JSON-able form."""
        flags = [self.finished, self.unanchored, self.started, self.trailing_first, self.closed]
        flags += [self.incomplete, self.opened, self.absorbed]
        return [self.family, self.key, self.acc, self.line, self.offset, *flags]

    @classmethod
    def from_list(cls, data: list[Any]) -> Partial:
        """Inverse of `to_list`; raises on a damaged form."""
        family, key, acc, line, offset, *flags = data
        if (family not in BY_NAME and family != ANY) or not isinstance(acc, dict):
            raise ValueError("a damaged open stream")
        return cls(str(family), key, acc, int(line), int(offset), *map(bool, flags))


@dataclass
class StreamState:
    """The open and unsettled requests of a stretch of one file (see the module's text)."""

    anchored: bool = False
    touched: bool = False
    open: list[Partial] = field(default_factory=list)
    heads: list[Partial] = field(default_factory=list)  # closed, waiting for what came before
    starts: list[Key] = field(default_factory=list)  # ids this stretch began with a start event
    firsts: dict[str, list[Any]] = field(default_factory=dict)  # family: [id, joins a finished]
    seen: set[Key] = field(default_factory=set)  # (family, id) met here (unanchored only)
    # requests an error event ended, whose own closing event (`response.failed`) may follow
    ended: list[Key] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Nothing read (the identity of `merge`)."""
        return not self.touched and not self.anchored

    # --- one pass over a stretch ----------------------------------------------------------

    def wants(self, form: str | None) -> bool:
        """Whether a record of format `form` must be fed (it may end an open stream, or one
        begun before this stretch)."""
        families = closer_families(form)
        if not families:
            return False
        if self.open:
            return True
        if self.anchored:
            return False
        if form == "error":
            return True
        return any(f.name not in self.firsts for f in families)

    def feed(
        self,
        family: Family | None,
        obj: dict[str, Any],
        line: int,
        offset: int,
        form: str | None,
        event: Event | None = None,
    ) -> list[Partial]:
        """Read one event (or a closer record of format `form`, `family` None); the requests
        it settles. `event`: the event read already (`parse.streams.read_event`; its fold
        becomes the request's, so it must be fresh)."""
        done: list[Partial] = []
        if family is None:
            return self._record(obj, line, offset, form, done)
        acc, start, end, trailing, opener = read_event(family, obj) if event is None else event
        key, name = acc.get("i"), family.name
        key = key if isinstance(key, str) else None
        self.touched = True
        # what a finished request before this stretch would make of its first event
        if name not in self.firsts:
            self.firsts[name] = [key, trailing or end]
        target = self._find(name, key)
        if target is None and not opener and not trailing:
            target = self._latest_unfinished(name)
        for p in [p for p in self.open if p.finished and p.family == name]:
            # a finished request ends at the next event not its own (another id; without ids,
            # anything but its trailing usage)
            own = p is target and (trailing or end or key is not None)
            if not own and p.ends_early:
                done.append(self._close(p))
                target = None if p is target else target
        if start and target is not None and (target.key == key or key is None):
            target.incomplete = True
            done.append(self._close(target))
            target = None
        if start and not self.anchored:
            self.starts.append((name, key))
        target = self._join(name, key, acc, line, offset, start, target)
        if target.acc is acc:
            target.opened = opener
        if trailing and target.acc["n"] == 1:
            target.trailing_first = True
        if "f" in acc:
            target.finished = True
        if end or (trailing and target.finished):
            done.append(self._close(target))
        return [p for p in done if not p.unanchored] if done else done

    def extend(self, family: Family, event: Event, line: int, offset: int) -> bool:
        """`feed` of an event that only carries on the latest open request of its family
        (no start, end, trailing usage or finish; no id, or that request's), when no request
        of the family is finished: written into that request, True. False (nothing done)
        for any other event, which `feed` reads. The state's folds are its own (made by
        its pass, copied by `copy`), so the event's is combined into the request's in place."""
        acc, start, end, trailing, _ = event
        if start or end or trailing or "f" in acc:
            return False
        name, target = family.name, None
        for p in self.open:
            if p.family == name:
                if p.finished:
                    return False  # the next event not its own ends it: `feed` decides
                target = p
        key = acc.get("i")
        if target is None or (key is not None and (type(key) is not str or key != target.key)):
            return False
        target.acc = combine_into(family, target.acc, acc)
        target.line, target.offset = line, offset
        return True

    def _record(
        self, obj: dict[str, Any], line: int, offset: int, form: str | None, done: list[Partial]
    ) -> list[Partial]:
        """A record a declaration reads alone: it ends the open stream of its family (an
        error: the latest open one), else it is a request of its own."""
        names = {f.name for f in closer_families(form)}
        target = next((p for p in reversed(self.open) if p.family in names), None)
        if target is None:
            name = ANY if form == "error" else next(f.name for f in closer_families(form))
            alone = Partial(name, None, fold(BY_NAME.get(name) or _ANY, obj, record=True), line,
                            offset)  # fmt: skip
            # an error with no stream open here ends the latest one open before this stretch
            alone.unanchored = not self.anchored and (
                not self.open if name == ANY else name not in self.firsts
            )
            if name != ANY:
                self.firsts.setdefault(name, [None, False])
                if not self.anchored:
                    _see(self.seen, name, None)
            self.touched = True
            alone.closed = True
            if alone.unanchored:
                self.heads.append(alone)
                return []
            return [alone]
        family = BY_NAME[target.family]
        target.acc = combine(family, target.acc, fold(family, obj, record=True))
        target.line, target.offset = line, offset
        done.append(self._close(target))
        if form == "error" and not family.error_ends:  # Responses: `response.failed` follows
            self.ended = [*self.ended[1 - ENDED_KEPT :], (target.family, target.key)]
        return [p for p in done if not p.unanchored]

    def absorbs(self, family: Family, obj: dict[str, Any]) -> bool:
        """The closing event of a request an error event already ended: an event only."""
        if not self.ended or not is_end(family, obj) or family.key is None:
            return False
        found = (family.name, family.key.first(obj))
        if found in self.ended:
            self.ended.remove(found)
            return True
        return False

    def _find(self, name: str, key: str | None) -> Partial | None:
        """The open request an event of (family, id) belongs to: the one of its id, else the
        latest of its family (an event without an id, or one begun by events without)."""
        for p in reversed(self.open):
            if p.family == name and (p.key == key or key is None or p.key is None):
                return p
        return None

    def _latest_unfinished(self, name: str) -> Partial | None:
        for p in reversed(self.open):
            if p.family == name:
                return None if p.finished else p
        return None

    def _join(
        self,
        name: str,
        key: str | None,
        acc: Acc,
        line: int,
        offset: int,
        start: bool,
        target: Partial | None,
    ) -> Partial:
        if target is None:
            target = Partial(name, key, acc, line, offset, started=start)
            first = (name, key) not in self.seen and (key is not None or name not in self._names())
            target.unanchored = not self.anchored and not start and first
            if not self.anchored:
                _see(self.seen, name, key)
            self.open.append(target)
            return target
        # the state's folds are its own (made by this pass, copied by `copy`): written in place
        target.acc = combine_into(BY_NAME[name], target.acc, acc)
        if target.key is None and key is not None and not self.anchored:
            _see(self.seen, name, key)  # the id is met here, as if it had begun the request
        target.key = target.key or key
        target.line, target.offset = line, offset
        return target

    def _names(self) -> set[str]:
        return {name for name, _ in self.seen}

    def _close(self, p: Partial) -> Partial:
        p.closed = True
        if p in self.open:
            self.open.remove(p)
        if p.unanchored:
            self.heads.append(p)
        return p

    # --- merging stretches ----------------------------------------------------------------

    def merge(self, other: StreamState) -> tuple[StreamState, list[Partial]]:
        """The state of this stretch then `other`, and the requests the join settles."""
        if other.empty:
            return self, []
        if self.empty:
            return other, []
        if other.anchored:  # it begins a file: nothing before it belongs to its requests
            both = StreamState(
                self.anchored, True, self.open + other.open, self.heads + other.heads
            )
            return both, []
        out, other = self.copy(), other.copy()
        out.touched = True
        out.firsts = {**other.firsts, **self.firsts}
        out.seen = set() if self.anchored else _canonical(self.seen | other.seen)
        done: list[Partial] = []
        for name, key in other.starts:
            if other._headed(name, key):
                continue  # a head before the start carries on p: its join settles p
            p = out._find(name, key)
            if p is not None and (p.key == key or key is None):
                p.incomplete = not p.finished
                out._settle(p, done)
            elif p is not None and p.key is None:  # one pass joins the start to p (id-less)
                _adopt(out, p, other, name, key)
        for name, (key, joins) in other.firsts.items():
            for p in [p for p in out.open if p.family == name and p.finished]:
                same = key is not None and p.key == key
                own = same or (joins and (key is None or p.key is None))
                if not own and p.ends_early:
                    out._settle(p, done)
        pending = [p for p in other.heads + other.open if p.unanchored]
        settled = [p for p in other.open if not p.unanchored]
        fresh: list[Partial] = []
        for u in sorted(pending, key=lambda p: p.line):
            done.extend(self._resolve(out, u, fresh))
        # the errors among those heads ended requests before `other`'s own errors did
        out.ended = (out.ended + other.ended)[-ENDED_KEPT:]
        # `other`'s requests still open after the join, in their order there
        order = {id(p): i for i, p in enumerate(other.open)}
        out.open.extend(sorted(fresh + settled, key=lambda p: order.get(id(p), len(order))))
        out.starts = [] if self.anchored else out.starts + other.starts
        return out, done

    def _headed(self, name: str, key: str | None) -> bool:
        """A request of (family, id) here began with no start event (a head, waiting for the
        stretch before): it came before every start of that id here, which one pass reads
        after the head's events (the start ended the head, as its `incomplete` says, or came
        after the head's end). A start without an id ends whichever request is open, so any
        head of its family counts: its join decides the request before (a Gemini
        Interactions head takes its id from its last event, its start had none)."""
        return any(p.unanchored and p.family == name and (p.key == key or key is None)
                   for p in self.heads + self.open)  # fmt: skip

    def _resolve(self, out: StreamState, u: Partial, fresh: list[Partial]) -> list[Partial]:
        """Join a head of the later stretch to the request it continues, if any."""
        if u.family == ANY:
            target = out.open[-1] if out.open else None
        elif (u.family, u.key) in out.ended and u.acc.get("n") == 1:
            out.ended.remove((u.family, u.key))
            u.absorbed, u.unanchored = True, False
            return [u]
        else:
            target = out._find(u.family, u.key)
            if target is None and not u.opened:
                target = out._latest_unfinished(u.family)
        if target is not None:
            family = BY_NAME[target.family]
            acc = u.acc
            if u.family == ANY and isinstance(u.acc.get("o"), dict):
                acc = fold(family, u.acc["o"], record=True)  # as the request's family reads it
            joined = Partial(
                target.family,
                target.key or u.key,
                combine(family, target.acc, acc),
                u.line,
                u.offset,
                finished=target.finished or u.finished,
                unanchored=target.unanchored,
                started=target.started,
                trailing_first=target.trailing_first,
                # a usage event closes only a finished request (as in one pass)
                closed=u.closed or (target.finished and u.trailing_first),
                incomplete=u.incomplete,
                opened=target.opened,
            )
            at = out.open.index(target)  # the request keeps its place among the open ones
            out.open.remove(target)
            if u.family == ANY and not family.error_ends:  # Responses: `response.failed` follows
                out.ended = [*out.ended[1 - ENDED_KEPT :], (target.family, target.key)]
            if joined.closed and joined.unanchored:
                out.heads.append(joined)
            elif joined.closed:
                return [joined]
            else:
                out.open.insert(at, joined)
            return []
        known = (u.family, u.key) in self.seen or u.family in {n for n, _ in self.seen}
        # an error with nothing open ends the latest request open before both stretches, as
        # in one pass (which keeps it waiting however much came before it in its stretch)
        if self.anchored or (known and u.family != ANY):
            u.unanchored = False
            if u.closed:
                return [u]
            fresh.append(u)
            return []
        (out.heads if u.closed else fresh).append(u)
        return []

    def _settle(self, p: Partial, done: list[Partial]) -> None:
        """`p` ends at a join: settled into `done`, or, begun in a stretch not anchored, kept
        waiting for one before it (as one pass closes it)."""
        self._close(p)
        if not p.unanchored:
            done.append(p)

    def settle(self) -> list[Partial]:
        """The file settled: every request still open (or waiting for a stretch before it)
        is one request now; an unfinished one ended without its final event."""
        done = []
        for p in self.heads + self.open:
            p.closed, p.unanchored = True, False
            p.incomplete = p.incomplete or not p.finished
            done.append(p)
        self.heads, self.open = [], []
        return done

    def copy(self) -> StreamState:
        """A copy whose requests can change without changing this state's."""
        return StreamState(
            self.anchored,
            self.touched,
            [replace(p, acc=dict(p.acc)) for p in self.open],
            [replace(p, acc=dict(p.acc)) for p in self.heads],
            list(self.starts),
            {k: list(v) for k, v in self.firsts.items()},
            set(self.seen),
            list(self.ended),
        )

    def shifted(self, lines: int) -> StreamState:
        """The same state with every line number moved by `lines`."""
        if not lines:
            return self
        out = self.copy()
        for p in out.open + out.heads:
            p.line += lines
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (an anchored state keeps only its open requests: nothing before it
        can join them, so what it met first is no more needed)."""
        if self.anchored:
            open_ = [p.to_list() for p in self.open]
            return {"anchored": True, "open": open_, "ended": [list(k) for k in self.ended]}
        return {
            "anchored": self.anchored,
            "touched": self.touched,
            "open": [p.to_list() for p in self.open],
            "heads": [p.to_list() for p in self.heads],
            "starts": [list(k) for k in self.starts],
            "firsts": self.firsts,
            # sorted: a set's order would differ between two equal states
            "seen": [list(k) for k in sorted(self.seen, key=lambda k: (k[0], k[1] or ""))],
            "ended": [list(k) for k in self.ended],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> StreamState:
        """Inverse of `to_dict`; an older state without streams is anchored with none open."""
        if data is None:
            return cls(anchored=True)
        if data["anchored"]:
            ended = [(str(n), k) for n, k in data["ended"]]
            opened = [Partial.from_list(p) for p in data["open"]]
            return cls(True, bool(opened), opened, ended=ended)
        return cls(
            bool(data["anchored"]),
            bool(data["touched"]),
            [Partial.from_list(p) for p in data["open"]],
            [Partial.from_list(p) for p in data["heads"]],
            [(str(n), k) for n, k in data["starts"]],
            {str(n): list(v) for n, v in data["firsts"].items()},
            {(str(n), k) for n, k in data["seen"]},
            [(str(n), k) for n, k in data.get("ended", [])],
        )


def _see(seen: set[Key], name: str, key: str | None) -> None:
    """Note that `seen` met (family, id), keeping it canonical (`_canonical`)."""
    if key is not None:
        seen.discard((name, None))
        seen.add((name, key))
    elif all(n != name for n, _ in seen):
        seen.add((name, None))


def _canonical(seen: set[Key]) -> set[Key]:
    """`seen` without a family's id-less entry once the family has an id: it decides nothing
    more (what reads `seen` asks an id-less event only whether its family was met), and equal
    reads keep equal states however they were cut."""
    keyed = {name for name, key in seen if key is not None}
    return {(name, key) for name, key in seen if key is not None or name not in keyed}


def _adopt(out: StreamState, p: Partial, other: StreamState, name: str, key: str | None) -> None:
    """The request `other` began with a start event of `key`, still open, continues `p`
    (open before it, without an id), as in one pass; `p` keeps its place."""
    begun = next((q for q in other.open if q.family == name and q.key == key and q.started), None)
    if begun is None:
        return  # it ended within `other` and was counted there
    other.open.remove(begun)
    at = out.open.index(p)
    out.open[at] = replace(
        begun,
        acc=combine(BY_NAME[name], p.acc, begun.acc),
        finished=p.finished or begun.finished,  # a finish before the start stays (one pass)
        unanchored=p.unanchored,
        started=p.started,
        trailing_first=p.trailing_first,
        opened=p.opened,
    )


_ANY = Family(ANY, events=())

RequestFacts = Callable[[Partial], list[Any]]


def request_object(p: Partial) -> dict[str, Any]:
    """The final object of a settled request (`parse.streams.final_object`)."""
    from genledger.parse.streams import final_object

    family = BY_NAME.get(p.family, _ANY)
    return final_object(family, p.acc)
