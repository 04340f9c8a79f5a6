"""The peers genledger is measured against, each computing totals over the same corpus.

    python benchmarks/peers.py json|orjson|duckdb|duckdb-tokenized CORPUS_DIR

Prints one JSON object: records, total_comp (valid completion counts, docs/formats.md path order),
records per format path, tokenized records, total_tokens and total_loss_tokens
(`duckdb-tokenized`: the last three only, from the tokenized files alone).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

CHUNK = 8 << 20


def data_files(root: Path) -> list[Path]:
    """Responses and tokenized files of every dataset (prompts files are only line-counted)."""
    return sorted(p for p in root.glob("*/*.jsonl") if not p.name.startswith("prompts"))


def lines(path: Path) -> Any:
    """Complete non-blank lines of a file, read in bounded chunks."""
    tail = b""
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            data = tail + chunk
            cut = data.rfind(b"\n") + 1
            tail = data[cut:]
            yield from (line for line in data[:cut].split(b"\n") if line.strip())


def _dig(obj: Any, *path: str | int) -> Any:
    for step in path:
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and len(obj) > step else None
        else:
            obj = obj.get(step) if isinstance(obj, dict) else None
        if obj is None:
            return None
    return obj


PATHS = (
    ("sglang_generate", ("meta_info", "completion_tokens")),
    ("openai", ("usage", "completion_tokens")),
    ("openai_batch", ("response", "body", "usage", "completion_tokens")),
    ("wrapped_openai", ("response", "usage", "completion_tokens")),
    ("tgi", ("details", "generated_tokens")),
    ("flat", ("completion_tokens",)),
)


def _other_api(rec: dict[str, Any]) -> tuple[str, Any] | None:
    """The v2 formats (Responses, Anthropic, Gemini, Cohere, vLLM n>1), by their paths."""
    output = _dig(rec, "usage", "output_tokens")
    if output is not None and rec.get("object") == "response":
        return "openai_responses", output
    if output is not None and rec.get("type") == "message":
        return "anthropic_message", output
    usage = rec.get("usageMetadata")
    if isinstance(usage, dict):
        parts = [usage.get(k) for k in ("candidatesTokenCount", "thoughtsTokenCount")]
        return "gemini", sum(p for p in parts if isinstance(p, int))
    cohere = _dig(rec, "usage", "tokens", "output_tokens")
    if isinstance(cohere, float):
        return "cohere_chat", int(cohere)
    outputs = rec.get("outputs")
    if isinstance(outputs, list) and ("request_id" in rec or "prompt_token_ids" in rec):
        return "vllm_offline", sum(len(o.get("token_ids") or []) for o in outputs)
    return None


def _count(rec: dict[str, Any]) -> tuple[str | None, Any]:
    """(format path, completion count) by docs/formats.md's order."""
    for fmt, path in PATHS[:2]:
        count = _dig(rec, *path)
        if count is not None:
            return fmt, count
    other = _other_api(rec)
    if other is not None:
        return other
    for fmt, path in PATHS[2:]:
        count = _dig(rec, *path)
        if count is not None:
            return fmt, count
    ids = rec.get("output_ids")
    if isinstance(ids, list):
        return "derived", len(ids)
    if "custom_id" in rec and rec.get("response") is None:  # a failed batch request
        return "openai_batch", None
    return None, None


def python_totals(root: Path, loads: Any) -> dict[str, Any]:
    """Totals with a per-line JSON decoder (`json.loads` or `orjson.loads`)."""
    out: Counter[str] = Counter()
    formats: Counter[str] = Counter()
    for path in data_files(root):
        tokenized = path.name.startswith("tokenized")
        for line in lines(path):
            value = loads(line)
            for rec in value if isinstance(value, list) else [value]:
                if tokenized:
                    out["tokenized"] += 1
                    out["total_tokens"] += len(rec.get("input_ids") or [])
                    out["total_loss_tokens"] += sum(rec.get("loss_mask") or [])
                    continue
                out["records"] += 1
                fmt, count = _count(rec)
                if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
                    out["total_comp"] += count
                if fmt is not None:  # every record of a format, failed requests included
                    formats[fmt] += 1
    return {**out, "formats": dict(sorted(formats.items()))}


def _holds_arrays(path: Path) -> bool:
    """The file's lines are JSON arrays of records (an SGLang batch dump)."""
    with path.open("rb") as fh:
        return fh.read(64).lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")


def duckdb_totals(root: Path) -> dict[str, Any]:
    """Totals with DuckDB `read_json` and explicit columns (the strongest peer a user picks)."""
    import duckdb

    con = duckdb.connect()
    usage = "STRUCT(completion_tokens BIGINT, prompt_tokens BIGINT)"
    columns = {
        "meta_info": "STRUCT(completion_tokens BIGINT, prompt_tokens BIGINT)",
        "usage": "STRUCT(completion_tokens BIGINT, prompt_tokens BIGINT, output_tokens BIGINT,"
        " tokens STRUCT(output_tokens DOUBLE))",
        "object": "VARCHAR",
        "type": "VARCHAR",
        "usageMetadata": "STRUCT(candidatesTokenCount BIGINT, thoughtsTokenCount BIGINT)",
        "outputs": "STRUCT(token_ids BIGINT[])[]",
        "request_id": "VARCHAR",
        "custom_id": "VARCHAR",
        "response": f"STRUCT(body STRUCT(usage {usage}), usage {usage})",
        "details": "STRUCT(generated_tokens BIGINT)",
        "completion_tokens": "BIGINT",
        "output_ids": "BIGINT[]",
    }
    files = [p for p in data_files(root) if not p.name.startswith("tokenized")]
    objects = [str(p) for p in files if not _holds_arrays(p)]
    arrays = [str(p) for p in files if _holds_arrays(p)]
    fields = ", ".join(columns)
    struct = ", ".join(f"{k} {v}" for k, v in columns.items())
    opts = "maximum_object_size=1000000000, ignore_errors=true"
    parts = []
    if objects:
        parts.append(f"SELECT {fields} FROM read_json({objects!r}, columns={columns!r}, {opts})")
    if arrays:
        unnested = ", ".join(f"x.{k} AS {k}" for k in columns)
        parts.append(
            f"SELECT {unnested} FROM (SELECT unnest(v) AS x FROM read_json({arrays!r}, "
            f"records='false', columns={{'v': 'STRUCT({struct})[]'}}, {opts}))"
        )
    rows = con.execute(
        f"""
        WITH r AS ({" UNION ALL ".join(parts)}),
        v AS (SELECT *,
            CASE WHEN usage.output_tokens IS NOT NULL AND object = 'response'
                 THEN usage.output_tokens END AS responses_n,
            CASE WHEN usage.output_tokens IS NOT NULL AND type = 'message'
                 THEN usage.output_tokens END AS anthropic_n,
            CASE WHEN usageMetadata IS NOT NULL
                 THEN coalesce(usageMetadata.candidatesTokenCount, 0)
                      + coalesce(usageMetadata.thoughtsTokenCount, 0) END AS gemini_n,
            CAST(usage.tokens.output_tokens AS BIGINT) AS cohere_n,
            CASE WHEN outputs IS NOT NULL AND request_id IS NOT NULL
                 THEN list_sum(list_transform(outputs, lambda o: len(o.token_ids))) END AS vllm_n
          FROM r),
        c AS (SELECT CASE
            WHEN meta_info.completion_tokens IS NOT NULL THEN 'sglang_generate'
            WHEN usage.completion_tokens IS NOT NULL THEN 'openai'
            WHEN responses_n IS NOT NULL THEN 'openai_responses'
            WHEN anthropic_n IS NOT NULL THEN 'anthropic_message'
            WHEN response.body.usage.completion_tokens IS NOT NULL THEN 'openai_batch'
            WHEN gemini_n IS NOT NULL THEN 'gemini'
            WHEN cohere_n IS NOT NULL THEN 'cohere_chat'
            WHEN response.usage.completion_tokens IS NOT NULL THEN 'wrapped_openai'
            WHEN details.generated_tokens IS NOT NULL THEN 'tgi'
            WHEN vllm_n IS NOT NULL THEN 'vllm_offline'
            WHEN completion_tokens IS NOT NULL THEN 'flat'
            WHEN output_ids IS NOT NULL THEN 'derived'
            WHEN custom_id IS NOT NULL AND response IS NULL THEN 'openai_batch' END AS fmt,
          coalesce(meta_info.completion_tokens, usage.completion_tokens, responses_n,
                   anthropic_n, response.body.usage.completion_tokens, gemini_n, cohere_n,
                   response.usage.completion_tokens, details.generated_tokens, vllm_n,
                   completion_tokens, len(output_ids)) AS n
          FROM v)
        SELECT fmt, count(*), sum(CASE WHEN n >= 0 THEN n END) FROM c GROUP BY fmt
        UNION ALL SELECT '*records*', count(*), 0 FROM c
        """
    ).fetchall()
    formats = {fmt: int(n) for fmt, n, _ in rows if fmt != "*records*" and fmt is not None}
    total = sum(int(s) for fmt, _, s in rows if fmt != "*records*" and s is not None)
    records = next(int(n) for fmt, n, _ in rows if fmt == "*records*")
    return {
        "records": records,
        "total_comp": total,
        **duckdb_tokenized(root, con),
        "formats": dict(sorted(formats.items())),
    }


def duckdb_tokenized(root: Path, con: Any = None) -> dict[str, int]:
    """Tokenized samples, their tokens and loss tokens, with DuckDB `read_json`."""
    import duckdb

    con = con or duckdb.connect()
    tok = [str(p) for p in data_files(root) if p.name.startswith("tokenized")]
    tokenized, tokens, loss = (
        (0, 0, 0)
        if not tok
        else con.execute(
            """SELECT count(*), sum(len(input_ids)), sum(list_sum(loss_mask))
           FROM read_json(?, columns={'input_ids': 'BIGINT[]', 'loss_mask': 'BIGINT[]'},
                          maximum_object_size=1000000000, ignore_errors=true)""",
            [tok],
        ).fetchone()
        or (0, 0, 0)
    )
    return {
        "tokenized": int(tokenized),
        "total_tokens": int(tokens or 0),
        "total_loss_tokens": int(loss or 0),
    }


def main() -> None:
    """CLI entry point: print the peer's totals as JSON."""
    import json

    peer, root = sys.argv[1], Path(sys.argv[2])
    totals: dict[str, Any]
    if peer == "duckdb":
        totals = duckdb_totals(root)
    elif peer == "duckdb-tokenized":  # the tokenized files' query alone
        totals = duckdb_tokenized(root)
    elif peer == "orjson":
        import orjson

        totals = python_totals(root, orjson.loads)
    else:
        totals = python_totals(root, json.loads)
    print(json.dumps(totals, sort_keys=True))


if __name__ == "__main__":
    main()
