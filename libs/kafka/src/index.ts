export { createKafka, createProducer, ensureTopics, pingKafka, type KafkaOptions } from './client.ts';
export { topicsFor, topicSpecs, type Topics, type TopicSpec } from './topics.ts';
