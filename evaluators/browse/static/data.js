// Reading the site folder (docs: evaluators/browse; format: site.json, rows.json, preds.bin, pairs.bin).
// Every URL is relative, so the page works under any path prefix. Nothing here computes a statistic.

const json = new Map();   // url -> Promise<object>
const whole = new Map();  // url -> Promise<ArrayBuffer> once a server answered a range request with the whole file
const runs = new Map();   // shard id + "\n" + run label -> Promise<decoded block>

export class LoadError extends Error {}

async function get(url, init) {
  let response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    throw new LoadError(`Could not fetch ${url}: ${error.message}`);
  }
  if (!response.ok) throw new LoadError(`Could not fetch ${url}: HTTP ${response.status} ${response.statusText}`);
  return response;
}

export function getJSON(url) {
  if (!json.has(url)) {
    const promise = get(url).then(async (response) => {
      try {
        return await response.json();
      } catch (error) {
        throw new LoadError(`${url} is not valid JSON: ${error.message}`);
      }
    });
    promise.catch(() => json.delete(url));   // a later try fetches again
    json.set(url, promise);
  }
  return json.get(url);
}

export const loadSite = () => getJSON("data/site.json");
export const loadVersions = () => getJSON("data/versions.json");
export const loadRows = (shard) => getJSON(`data/shards/${shard.id}/rows.json`);

// Bytes [start, start + length) of url: a Range request; a 200 answer (no range support) is the whole file, kept and
// sliced for every later read of the same file.
export async function getRange(url, start, length) {
  if (whole.has(url)) return slice(await whole.get(url), url, start, length);
  const response = await get(url, {headers: {Range: `bytes=${start}-${start + length - 1}`}});
  if (response.status === 206) {
    const buffer = await response.arrayBuffer();
    if (buffer.byteLength !== length) {
      throw new LoadError(`${url}: asked for ${length} bytes at ${start}, the server sent ${buffer.byteLength}`);
    }
    return buffer;
  }
  const promise = response.arrayBuffer();
  whole.set(url, promise);
  return slice(await promise, url, start, length);
}

function slice(buffer, url, start, length) {
  if (start + length > buffer.byteLength) {
    throw new LoadError(`${url} has ${buffer.byteLength} bytes; bytes ${start}..${start + length - 1} are missing`);
  }
  return buffer.slice(start, start + length);
}

export function runOf(shard, label) {
  const run = shard.runs.find((r) => r.label === label);
  if (!run) {
    const known = shard.runs.map((r) => r.label).join(", ");
    throw new LoadError(`Unknown model "${label}" for ${shard.probe}/${shard.variant}/${shard.split}; its models: ${known}`);
  }
  return run;
}

// One run's block of preds.bin: {pred: Int32Array, margin: Float32Array, correct: Uint8Array, scores: Float32Array|null}.
export function loadRun(shard, label) {
  const key = `${shard.id}\n${label}`;
  if (!runs.has(key)) {
    const run = runOf(shard, label);
    const promise = getRange(`data/shards/${shard.id}/preds.bin`, run.offset, shard.block)
      .then((buffer) => decodeBlock(buffer, shard.n, shard.k));
    promise.catch(() => runs.delete(key));
    runs.set(key, promise);
  }
  return runs.get(key);
}

export function decodeBlock(buffer, n, k) {
  const scoresAt = 8 * n + Math.ceil(n / 4) * 4;
  const need = scoresAt + (k > 0 ? 4 * n * k : 0);
  if (buffer.byteLength < need) throw new LoadError(`a preds.bin block has ${buffer.byteLength} bytes, ${need} expected`);
  return {
    pred: new Int32Array(buffer, 0, n),
    margin: new Float32Array(buffer, 4 * n, n),
    correct: new Uint8Array(buffer, 8 * n, n),
    scores: k > 0 ? new Float32Array(buffer, scoresAt, n * k) : null,
  };
}

export const loadRuns = (shard, labels) => Promise.all(labels.map((label) => loadRun(shard, label)));

// pairs.bin entry (a, b): the eight numbers the builder computed (counts, difference, its interval, McNemar's p).
export async function loadPair(shard, a, b) {
  const m = shard.runs.length;
  const ia = shard.runs.indexOf(runOf(shard, a));
  const ib = shard.runs.indexOf(runOf(shard, b));
  const buffer = await getRange(`data/shards/${shard.id}/pairs.bin`, (ia * m + ib) * 32, 32);
  const [rr, rw, wr, ww, diff, low, high, p] = new Float32Array(buffer);
  return {RR: rr, RW: rw, WR: wr, WW: ww, diff, low, high, p};
}

// Shards are named in the URL by probe, variant, split (and collection when two shards share those).
export function findShard(site, {probe, variant, split, collection}) {
  const hit = site.shards.find((s) => (!probe || s.probe === probe) && (!variant || s.variant === variant)
    && (!split || s.split === split) && (!collection || s.collection === collection));
  if (!hit) {
    const what = [collection, probe, variant, split].filter(Boolean).join("/");
    throw new LoadError(`No examples for ${what || "this site"}: unknown probe, variant or split (see the overview)`);
  }
  return hit;
}

// The shard a URL's params name (URLSearchParams).
export const shardOfParams = (site, params) =>
  findShard(site, Object.fromEntries(["probe", "variant", "split", "collection"].map((k) => [k, params.get(k)])));

export function shardParams(site, shard) {
  const out = {probe: shard.probe, variant: shard.variant, split: shard.split};
  const twins = site.shards.filter((s) => s.probe === shard.probe && s.variant === shard.variant && s.split === shard.split);
  if (twins.length > 1) out.collection = shard.collection;
  return out;
}

export const shardById = (site, id) => site.shards.find((s) => s.id === id);

// Display helpers shared by the views.
export function predText(shard, rows, row, pred) {
  if (pred < 0) return "";
  const texts = shard.k > 0 ? row.choices : rows.vocab;
  return texts && pred < texts.length ? String(texts[pred]) : `#${pred}`;
}

export const fmtNum = (x, digits = 3) => (Number.isFinite(x) ? x.toFixed(digits) : "—");
export const fmtPct = (x) => (Number.isFinite(x) ? (100 * x).toFixed(1) : "—");
export const mark = (c) => (c === 1 ? "✓" : c === 0 ? "✗" : "–");
