"""Delivery channels, each enabled by an environment variable that also holds its secret.

The generic webhook and Slack are small `httpx` clients (exact JSON body, any URL, the HTTP
status is the delivery result; redirects are not followed, so a moved URL is a failure rather
than a bodiless GET); each send is a coroutine, so the courier's deadline cancels it whole.
Email goes through apprise (MIME, STARTTLS/SSL, login); `GENLEDGER_APPRISE_URLS` reaches
anything else apprise knows.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote, urlencode

from genledger.config import NotifySettings
from genledger.notify import render
from genledger.notify.model import Message

ENV_WEBHOOK = "GENLEDGER_WEBHOOK_URL"
ENV_SLACK = "GENLEDGER_SLACK_WEBHOOK_URL"
ENV_APPRISE = "GENLEDGER_APPRISE_URLS"
ENV_UI_URL = "GENLEDGER_UI_URL"
ENV_SMTP = "GENLEDGER_SMTP_"
ENV_EMAIL_TO = "GENLEDGER_EMAIL_TO"
ENV_EMAIL_FROM = "GENLEDGER_EMAIL_FROM"
SECRET_ENV = (
    ENV_WEBHOOK,
    ENV_SLACK,
    ENV_APPRISE,
    "GENLEDGER_SMTP_USER",
    "GENLEDGER_SMTP_PASSWORD",
)
HTTP_TIMEOUT_S = 10.0  # each read and write; the courier bounds the whole request
_SMTP_MODES = {"none": "insecure", "starttls": "starttls", "ssl": "ssl"}


class DeliveryError(RuntimeError):
    """A channel did not accept a message; the text names no secret."""


class Channel(Protocol):
    """Something a message can be delivered to."""

    name: str

    async def send(self, message: Message) -> None:
        """Deliver or raise `DeliveryError` (or any exception)."""


@dataclass
class WebhookChannel:
    """POST the generic JSON body to a URL; any 2xx is a delivery."""

    url: str
    ui_url: str | None = None
    name: str = "webhook"

    async def send(self, message: Message) -> None:
        """POST `render.json_body(message)`."""
        await _post_json(self.url, render.json_body(message, self.ui_url))


@dataclass
class SlackChannel:
    """POST readable text to a Slack (or Slack-compatible) incoming webhook."""

    url: str
    ui_url: str | None = None
    name: str = "slack"

    async def send(self, message: Message) -> None:
        """POST `{"text": ...}`, escaped by Slack's (and Mattermost's) rules."""
        await _post_json(self.url, {"text": render.slack_text(message, self.ui_url)})


@dataclass
class AppriseChannel:
    """Deliver through apprise to one or more apprise URLs (email, Teams, Discord, ntfy...)."""

    urls: tuple[str, ...]
    ui_url: str | None = None
    name: str = "apprise"

    async def send(self, message: Message) -> None:
        """Notify every URL; any failure is a failed delivery for the whole channel."""
        await _in_thread(self._send, message)

    def _send(self, message: Message) -> None:
        import apprise  # imported lazily: loading its plugins costs ~0.5 s

        sender = apprise.Apprise()
        for url in self.urls:
            if not sender.add(url):
                raise DeliveryError(f"{self.name}: an apprise URL was not understood")
        result = sender.notify(title=render.title(message), body=render.text(message, self.ui_url))
        if not result:
            raise DeliveryError(f"{self.name}: apprise reported the delivery failed")


async def _post_json(url: str, body: dict[str, object]) -> None:
    import httpx  # imported lazily, like apprise: most ticks send nothing

    data = json.dumps(body, ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json"}
    try:
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S, follow_redirects=False) as client:
            response = await client.post(url, content=data, headers=headers)
    except httpx.HTTPError as exc:
        raise DeliveryError(f"connection failed: {_cause(exc)}") from None
    status = response.status_code
    if response.is_redirect:
        raise DeliveryError(f"HTTP {status}: redirected, not followed (set the URL it moved to)")
    if not 200 <= status < 300:
        raise DeliveryError(f"HTTP {status}")


def _cause(exc: BaseException) -> str:
    """The innermost cause's type: `ConnectError`, or the OS error beneath it."""
    for _ in range(10):  # a bounded walk: chains may loop
        inner = exc.__cause__ or exc.__context__
        if inner is None:
            break
        exc = inner
    return type(exc).__name__


async def _in_thread(function: object, message: Message) -> None:
    """Run a blocking send on a daemon thread: a deadline stops waiting for it, and the
    abandoned thread never holds up the tick's return (the library's own timeouts end it)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def run() -> None:
        outcome: BaseException | None = None
        try:
            function(message)  # type: ignore[operator]
        except BaseException as exc:  # handed back to the waiting coroutine
            outcome = exc
        # once the tick is over its loop is closed: nobody waits for this result then
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, done, outcome)

    threading.Thread(target=run, name="genledger-notify", daemon=True).start()
    await done


def _settle(future: asyncio.Future[None], exc: BaseException | None) -> None:
    if future.done():
        return
    if exc is None:
        future.set_result(None)
    else:
        future.set_exception(exc)


def email_url(env: Mapping[str, str], settings: NotifySettings) -> str | None:
    """The apprise mailto URL built from GENLEDGER_SMTP_* (None when email is not set up)."""
    host = env.get(ENV_SMTP + "HOST", "").strip()
    to = _split(env.get(ENV_EMAIL_TO, "")) or list(settings.email_to)
    if not host or not to:
        return None
    tls = env.get(ENV_SMTP + "TLS", "starttls").strip().lower() or "starttls"
    if tls not in _SMTP_MODES:
        raise ValueError(f"{ENV_SMTP}TLS must be one of none, starttls, ssl (got {tls!r})")
    port = env.get(ENV_SMTP + "PORT", "").strip() or {"none": "25", "starttls": "587"}.get(
        tls, "465"
    )
    user, password = env.get(ENV_SMTP + "USER", ""), env.get(ENV_SMTP + "PASSWORD", "")
    login = f"{quote(user, safe='')}:{quote(password, safe='')}@" if user else ""
    query = {
        "mode": _SMTP_MODES[tls],
        "smtp": host,
        "from": env.get(ENV_EMAIL_FROM, "").strip() or settings.email_from,
        "to": ",".join(to),
        "format": "text",
        "cto": "5",  # connect timeout: a dead server must not eat the sensor tick
        "rto": "10",
    }
    scheme = "mailto" if tls == "none" else "mailtos"
    return f"{scheme}://{login}{host}:{int(port)}/?{urlencode(query)}"


def channels_from_env(
    env: Mapping[str, str], settings: NotifySettings, problems: list[str] | None = None
) -> list[Channel]:
    """The channels the environment enables, in a fixed order; misconfigured ones go to problems."""
    ui_url = env.get(ENV_UI_URL, "").strip() or None
    found: list[Channel] = []
    if env.get(ENV_WEBHOOK, "").strip():
        found.append(WebhookChannel(env[ENV_WEBHOOK].strip(), ui_url))
    if env.get(ENV_SLACK, "").strip():
        found.append(SlackChannel(env[ENV_SLACK].strip(), ui_url))
    try:
        mail = email_url(env, settings)
    except ValueError as exc:
        mail = None
        if problems is not None:
            problems.append(f"email disabled: {exc}")
    if mail:
        found.append(AppriseChannel((mail,), ui_url, name="email"))
    extra = tuple(_split_urls(env.get(ENV_APPRISE, "")))
    if extra:
        found.append(AppriseChannel(extra, ui_url))
    return found


def secrets_from_env(env: Mapping[str, str]) -> list[str]:
    """Every value that must never be written anywhere, URL-encoded forms included."""
    values: list[str] = []
    for name in SECRET_ENV:
        for value in [env.get(name, "").strip(), *_split_urls(env.get(name, ""))]:
            if value:
                values.extend({value, quote(value, safe="")})
    return values


def _split(value: str) -> list[str]:
    """Addresses separated by commas, semicolons or spaces."""
    return [part for part in value.replace(";", " ").replace(",", " ").split() if part]


def _split_urls(value: str) -> list[str]:
    """URLs separated by whitespace (a URL may itself hold commas)."""
    return value.split()
