import { AssignerProtocol, PartitionAssigners, type Admin, type PartitionAssigner } from 'kafkajs';

/**
 * What a consumer group's members can do, carried in their group membership: each member's
 * subscription metadata holds the capabilities its release has (the user data of Kafka's
 * consumer protocol), so another process can ask whether every member of a group has one
 * before it writes what only such members can read (staged uploads, MERIDIAN_UPLOAD_STAGING=auto).
 *
 * The assignment stays kafkajs' round robin under its own protocol name, so members of an
 * older release, which advertise nothing, still agree with newer ones on how to share the
 * partitions; they only lack the capabilities.
 */
const MARK = 'meridian-capabilities:';

function encode(capabilities: readonly string[]): Buffer {
  return Buffer.from(MARK + JSON.stringify(capabilities));
}

/** The capabilities in a member's user data; none when it carries none of ours (another release or client). */
export function capabilitiesOf(userData: Buffer | null | undefined): readonly string[] {
  const text = userData?.toString('utf8') ?? '';
  if (!text.startsWith(MARK)) return [];
  try {
    const list: unknown = JSON.parse(text.slice(MARK.length));
    return Array.isArray(list) ? list.filter((c): c is string => typeof c === 'string') : [];
  } catch {
    return [];
  }
}

/** kafkajs' round-robin assigner, its members advertising `capabilities`. */
export function advertisingAssigner(capabilities: readonly string[]): PartitionAssigner {
  return (config) => {
    const roundRobin = PartitionAssigners.roundRobin(config);
    return {
      ...roundRobin,
      protocol({ topics }) {
        return {
          name: roundRobin.name,
          metadata: AssignerProtocol.MemberMetadata.encode({ version: roundRobin.version, topics, userData: encode(capabilities) }),
        };
      },
    };
  };
}

/**
 * Whether the group has members and every one advertises `capability`. A group without members
 * (nobody to ask), or in a rebalance (its members are not all known yet), answers false: the
 * caller then does without what the capability allows.
 */
export async function groupAdvertises(admin: Admin, groupId: string, capability: string): Promise<boolean> {
  const { groups } = await admin.describeGroups([groupId]);
  const group = groups.find((g) => g.groupId === groupId);
  if (group === undefined || group.state !== 'Stable' || group.members.length === 0) return false;
  return group.members.every((m) => capabilitiesOf(AssignerProtocol.MemberMetadata.decode(m.memberMetadata)?.userData).includes(capability));
}
