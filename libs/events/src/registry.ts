import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import avro from 'avsc';
import { crc64Avro } from './crc64-avro.ts';

/** One version of one event schema, as kept in schemas/<Name>/v<N>.avsc. */
export type SchemaVersion = {
  readonly name: string;
  readonly version: number;
  readonly type: avro.Type;
  readonly fingerprint: bigint;
};

export const SCHEMAS_DIR = new URL('../../../schemas/', import.meta.url).pathname;

/** The Parsing Canonical Form, as avsc produces it for fingerprinting. */
export function canonicalForm(type: avro.Type): string {
  return JSON.stringify(type.schema());
}

export function fingerprintOf(type: avro.Type): bigint {
  return crc64Avro(Buffer.from(canonicalForm(type), 'utf8'));
}

/**
 * Every schema version ever written. Writers use the newest version of a name;
 * readers resolve any older writer version into the newest (Avro schema resolution).
 */
export class SchemaRegistry {
  private readonly byFingerprint = new Map<bigint, SchemaVersion>();
  private readonly latestByName = new Map<string, SchemaVersion>();

  constructor(versions: Iterable<SchemaVersion>) {
    for (const v of versions) {
      const clash = this.byFingerprint.get(v.fingerprint);
      if (clash) throw new Error(`schemas ${clash.name} v${clash.version} and ${v.name} v${v.version} have the same fingerprint`);
      this.byFingerprint.set(v.fingerprint, v);
      const latest = this.latestByName.get(v.name);
      if (!latest || latest.version < v.version) this.latestByName.set(v.name, v);
    }
  }

  static loadFromDirectory(dir: string = SCHEMAS_DIR): SchemaRegistry {
    const versions: SchemaVersion[] = [];
    for (const name of readdirSync(dir)) {
      for (const file of readdirSync(join(dir, name))) {
        const match = /^v(\d+)\.avsc$/.exec(file);
        if (!match) continue;
        const schema = JSON.parse(readFileSync(join(dir, name, file), 'utf8')) as avro.Schema;
        const type = avro.Type.forSchema(schema);
        if (type.name !== `meridian.${name}`) throw new Error(`${name}/${file} declares ${type.name}, expected meridian.${name}`);
        versions.push({ name, version: Number(match[1]), type, fingerprint: fingerprintOf(type) });
      }
    }
    return new SchemaRegistry(versions);
  }

  latest(name: string): SchemaVersion | undefined {
    return this.latestByName.get(name);
  }

  byPrint(fingerprint: bigint): SchemaVersion | undefined {
    return this.byFingerprint.get(fingerprint);
  }

  versionsOf(name: string): SchemaVersion[] {
    return [...this.byFingerprint.values()].filter((v) => v.name === name).sort((a, b) => a.version - b.version);
  }

  names(): string[] {
    return [...this.latestByName.keys()].sort();
  }
}
