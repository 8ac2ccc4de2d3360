export { createKafka, createProducer, ensureTopics, pingKafka, type KafkaOptions } from './client.ts';
export { TASKS_PARTITIONS, topicsFor, topicSpecs, type Topics, type TopicSpec } from './topics.ts';
export { appendEvents, type Position } from './append.ts';
export { TopicFollower, type FollowerOptions } from './follow.ts';
