"""A SPARQL client for the loaders that query a public endpoint: a descriptive User-Agent, retries with
back-off on 429/5xx (``Retry-After`` honoured), timeouts, and every answer cached as a file so that a
rebuild never asks again (the cache is a DVC output)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import requests

from probekit.outputs import atomic
from probekit.errors import DataError
from probekit.sources.fetch import make_session
from probekit.sources.manifest import FetchError

WDQS = "https://query.wikidata.org/sparql"
DEFAULT_USER_AGENT = ("probekit/0.1 (oLMpics-style probe generator; https://github.com/probekit/probekit; "
                      "contact: YOUR-EMAIL@example.org) python-requests")


class SparqlClient:
    """GET queries to a SPARQL endpoint with a descriptive User-Agent, retries (429/5xx, exponential back-off,
    ``Retry-After`` honoured) and timeouts; answers are SPARQL 1.1 JSON results."""

    def __init__(self, endpoint: str = WDQS, user_agent: str = DEFAULT_USER_AGENT, timeout_s: float = 120.0,
                 retries: int = 5, backoff_s: float = 2.0, session: requests.Session | None = None):
        self.endpoint, self.timeout = endpoint, (10.0, timeout_s)
        self.session = session or make_session(retries=retries, backoff_factor=backoff_s)
        self.session.headers.update({"User-Agent": user_agent, "Accept": "application/sparql-results+json"})

    def select(self, query: str) -> dict:
        try:
            r = self.session.get(self.endpoint, params={"query": query, "format": "json"}, timeout=self.timeout)
            r.raise_for_status()
            result = r.json()
        except requests.RequestException as e:
            raise FetchError(f"SPARQL {self.endpoint}: {type(e).__name__}: {' '.join(str(e).split())[:300]}") from None
        except ValueError:
            raise FetchError(f"SPARQL {self.endpoint}: the answer is not JSON") from None
        if not isinstance(result, dict) or not isinstance(result.get("results", {}).get("bindings"), list):
            raise FetchError(f"SPARQL {self.endpoint}: the answer is not SPARQL JSON results")
        return result


def cached_select(cache: Path, relation: str, query: str, client_factory) -> dict:
    """The SPARQL JSON answer to ``query``, from ``cache/<relation>.json`` when it exists, else asked once and
    stored there (atomically). ``client_factory()`` is only called when the endpoint must be asked."""
    path = cache / f"{relation}.json"
    if path.is_file():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise DataError(f"{path}: not a JSON file: {e}") from None
        if not isinstance(stored, dict) or "response" not in stored:
            raise DataError(f"{path}: not a probekit SPARQL cache file (no \"response\")")
        if stored.get("query") != query:
            raise DataError(f"{path}: cached for another query (params changed); delete it to query Wikidata again")
        return stored["response"]
    client = client_factory()
    response = client.select(query)
    atomic.write_json(path, {"endpoint": client.endpoint, "query": query, "relation": relation,
                             "retrieved_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                             "response": response})
    return response
