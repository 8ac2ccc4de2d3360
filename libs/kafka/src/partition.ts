/**
 * The partition kafkajs' DefaultPartitioner (the producer's, createProducer) gives a keyed
 * record in a topic of `partitions` partitions: murmur2 of the key's UTF-8 bytes, made
 * positive, modulo the count (the Java client's rule). An app that must know a record's
 * partition before it sends it (to bound the bytes per partition of one request, and to tell
 * each record's offset from the acknowledgement) computes it here, since apps do not import
 * kafkajs; the unit test pins it to kafkajs' own choice, so a key's order cannot change.
 */
export function partitionFor(key: string, partitions: number): number {
  return (murmur2(Buffer.from(key, 'utf8')) & 0x7fffffff) % partitions;
}

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** Kafka's 32-bit murmur2 (org.apache.kafka.common.utils.Utils.murmur2), in int32 arithmetic. */
function murmur2(data: Buffer): number {
  const length = data.length;
  let h = SEED ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & 3;
  if (tail > 0) {
    if (tail === 3) h ^= data[whole + 2]! << 16;
    if (tail >= 2) h ^= data[whole + 1]! << 8;
    h ^= data[whole]!;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}
