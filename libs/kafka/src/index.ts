export { createKafka, createProducer, ensureTopics, pingKafka, type KafkaOptions } from './client.ts';
export { topicsFor, topicSpecs, topicMismatches, replicationWarning, WHY_KEPT, type Topics, type TopicLayout, type TopicSpec, type ExistingTopic, type TopicMismatch } from './topics.ts';
export { appendEvents, type Position } from './append.ts';
export { TopicFollower, type FollowerOptions } from './follow.ts';
export { ConsumerWatch, nextConsumerState, notServing, type ConsumerState, type ConsumerEvent } from './consumer-watch.ts';
export { TransactionalProducer, TransactionInterrupted, type Transactions } from './transactional.ts';
