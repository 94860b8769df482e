/**
 * Sharded list and watch (KEP-5866, Kubernetes 1.36 alpha, gate `ShardedListAndWatch`): the hash
 * the API server shards by, our split of its space into N shards, and the `shardSelector` that
 * asks the server for some of them.
 *
 * The server hashes a field's string value (we use `object.metadata.uid`) with FNV-1a 64-bit and
 * keeps an object when the hash lies in one of the selector's `[start, end)` ranges. We split the
 * space along its top byte, 256 buckets, shard i of n holding buckets
 * `[floor(i·256/n), floor((i+1)·256/n))`: so a child can carry its parent's bucket in a label
 * (children have uids of their own, which the server cannot map to the parent's) and be selected
 * by the same split, and a bucket label does not depend on n. Hence at most 256 shards.
 *
 * Verified against kube-apiserver v1.36.3: the exact hash on
 * uids of built-in and custom objects; bounds are `0x` and exactly 16 lowercase hex digits, the
 * end of the space `0x10000000000000000` (`'0x0'` is refused with a 500, so selectors are only
 * ever built here); ranges OR-ed with `||`.
 */

/** How many buckets the hash space is split into (its top byte). */
export const BUCKETS = 256;

/** The most shards a ring may have: one bucket each. */
export const MAX_SHARDS: number = BUCKETS;

/** The exclusive end of the whole space, 2^64, the one 17-digit bound the server accepts. */
const END_OF_SPACE = "0x10000000000000000";

const encoder = new TextEncoder();

/** FNV-1a 64 of `value`'s UTF-8 bytes, as 16 lowercase hex digits (apimachinery's HashField). */
export function fnv1a64Hex(value: string): string {
  // The 64-bit state as two unsigned 32-bit halves. The prime is 2^40 + 0x1b3, so
  // h × prime = h × 0x1b3 + (h << 40) (mod 2^64), and h << 40 only reaches the high half.
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  const step = (byte: number) => {
    lo = (lo ^ byte) >>> 0;
    const low = lo * 0x1b3; // < 2^41: exact in a double
    hi = (Math.imul(hi, 0x1b3) + Math.floor(low / 0x1_0000_0000) + (lo << 8)) >>> 0;
    lo = low >>> 0;
  };
  let ascii = true;
  for (let i = 0; i < value.length && ascii; i++) ascii = value.charCodeAt(i) < 0x80;
  if (ascii) {
    for (let i = 0; i < value.length; i++) step(value.charCodeAt(i)); // uids: one byte a character
  } else {
    for (const byte of encoder.encode(value)) step(byte);
  }
  return hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");
}

/** The bucket (0–255) of a key, e.g. an object's uid: the top byte of its hash. */
export function bucketOf(key: string): number {
  return parseInt(fnv1a64Hex(key).slice(0, 2), 16);
}

/** How a bucket is written in a label value: two lowercase hex digits. */
export function bucketLabel(bucket: number): string {
  return bucket.toString(16).padStart(2, "0");
}

/** The first bucket of shard `shard` of `count`, and the first one after it. */
export function bucketsOf(shard: number, count: number): [start: number, end: number] {
  checkShard(shard, count);
  return [Math.floor(shard * BUCKETS / count), Math.floor((shard + 1) * BUCKETS / count)];
}

/** The shard (of `count`) that holds `bucket`. */
export function shardOfBucket(bucket: number, count: number): number {
  checkShard(0, count);
  // The largest i with floor(i·256/count) ≤ bucket.
  return Math.floor(((bucket + 1) * count - 1) / BUCKETS);
}

/** The shard (of `count`) of a key, e.g. a parent's uid. */
export function shardOf(key: string, count: number): number {
  return shardOfBucket(bucketOf(key), count);
}

/**
 * The `shardSelector` for objects whose uid lies in any of `shards` (of `count`): adjacent shards
 * make one range. Undefined when that is the whole space (no selector needed) ; an empty set has
 * no selector either, and selects nothing: ask for nothing instead.
 */
export function shardSelector(shards: Iterable<number>, count: number): string | undefined {
  const ranges = bucketRanges(shards, count);
  if (!ranges.length) return undefined;
  if (ranges.length === 1 && ranges[0][0] === 0 && ranges[0][1] === BUCKETS) return undefined;
  return ranges.map(([start, end]) =>
    `shardRange(object.metadata.uid, '${bound(start)}', '${bound(end)}')`
  ).join(" || ");
}

/** The selector of the whole space: what probes whether the server honours selectors at all. */
export const WHOLE_SPACE_SELECTOR = `shardRange(object.metadata.uid, '${bound(0)}', '${
  bound(BUCKETS)
}')`;

/** The buckets of `shards` (of `count`), as sorted, merged `[start, end)` ranges. */
export function bucketRanges(shards: Iterable<number>, count: number): [number, number][] {
  const ranges = [...new Set(shards)].sort((a, b) => a - b).map((s) => bucketsOf(s, count));
  const merged: [number, number][] = [];
  for (const [start, end] of ranges) {
    const last = merged.at(-1);
    if (last && last[1] === start) last[1] = end;
    else merged.push([start, end]);
  }
  return merged;
}

/** The server's literal for the start of `bucket` (bucket·2^56), or the end of the space. */
function bound(bucket: number): string {
  if (bucket >= BUCKETS) return END_OF_SPACE;
  return `0x${bucketLabel(bucket)}${"0".repeat(14)}`;
}

function checkShard(shard: number, count: number): void {
  if (!Number.isInteger(count) || count < 1 || count > MAX_SHARDS) {
    throw new RangeError(`a ring has 1 to ${MAX_SHARDS} shards, not ${count}`);
  }
  if (!Number.isInteger(shard) || shard < 0 || shard >= count) {
    throw new RangeError(`shard ${shard} is not one of 0…${count - 1}`);
  }
}
