import { describe, expect, it } from 'vitest';
import { AssignerProtocol, PartitionAssigners } from 'kafkajs';
import { advertisingAssigner, capabilitiesOf } from './capabilities.ts';

const config = { cluster: {} as never, groupId: 'g', logger: {} as never };

describe('advertised capabilities', () => {
  it('ride in the round robin protocol under its own name, so older members of the group still agree on it', () => {
    const assigner = advertisingAssigner(['reads-staged-uploads-v1'])(config);
    const plain = PartitionAssigners.roundRobin(config);
    expect([assigner.name, assigner.version]).toEqual([plain.name, plain.version]);
    const { name, metadata } = assigner.protocol({ topics: ['points'] });
    expect(name).toBe(plain.name);
    const decoded = AssignerProtocol.MemberMetadata.decode(metadata)!;
    expect(decoded.topics).toEqual(['points']);
    expect(capabilitiesOf(decoded.userData)).toEqual(['reads-staged-uploads-v1']);
  });

  it('are none for a member that carries none of ours: an older release, another client, garbage', () => {
    const older = AssignerProtocol.MemberMetadata.decode(PartitionAssigners.roundRobin(config).protocol({ topics: ['points'] }).metadata)!;
    expect(capabilitiesOf(older.userData)).toEqual([]);
    expect(capabilitiesOf(null)).toEqual([]);
    expect(capabilitiesOf(Buffer.from('meridian-capabilities:{not json'))).toEqual([]);
    expect(capabilitiesOf(Buffer.from('meridian-capabilities:{"a":1}'))).toEqual([]);
    expect(capabilitiesOf(Buffer.from('meridian-capabilities:["x",2]'))).toEqual(['x']);
  });
});
