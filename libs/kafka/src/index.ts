export { createKafka, createProducer, ensureTopics, pingKafka, type KafkaOptions, type PartitionShortfall } from './client.ts';
export { topicsFor, topicSpecs, type Topics, type TopicSpec } from './topics.ts';
export { appendEvents, type Position } from './append.ts';
export { TopicFollower, type FollowerOptions } from './follow.ts';
