/**
 * Facts about Kafka 4.0's broker configs, for DescribeConfigs and for
 * checking dynamic changes (AlterConfigs, IncrementalAlterConfigs on a
 * broker resource): every name Kafka's broker defines, its type, its
 * default, whether and how it can be changed at run time, and the value
 * check of those that can. Gathered from Kafka 4.0.2's own config
 * definitions by a script (names, types, defaults, update modes and value
 * ranges only).
 *
 * Also here: gregor's choices on top of those facts, i.e. which broker
 * configs a broker resource lists and which dynamic changes gregor takes
 * (see dynamicMode).
 */
import {
  atLeast,
  between,
  GZIP_LEVEL,
  listOf,
  oneOf,
  topicConfigDef,
  TOPIC_CONFIGS_BY_SERVER_NAME,
  type ConfigType,
  type ValueCheck,
} from '../../storage/topic-config.js';

/**
 * How Kafka lets a config change at run time: 'r' not at all (read-only),
 * 'c' cluster-wide (at the cluster default or one broker), 'b' per broker
 * only. A trailing 'i' marks Kafka's internal configs, which its
 * DescribeConfigs never lists.
 */
type Mode = 'r' | 'c' | 'b' | 'ri';

type Row = readonly [name: string, type: ConfigType, dflt: string | null, mode: Mode, check?: ValueCheck];

/** Every broker config of Kafka 4.0, in the order its DescribeConfigs lists them (internal ones last). */
const KAFKA_BROKER_CONFIGS: readonly Row[] = [
  ['log.cleaner.min.compaction.lag.ms', 'long', '0', 'c', atLeast(0)],
  ['offsets.topic.num.partitions', 'int', '50', 'r'],
  ['sasl.oauthbearer.jwks.endpoint.refresh.ms', 'long', '3600000', 'r'],
  ['remote.log.metadata.manager.listener.name', 'string', null, 'r'],
  ['log.flush.interval.messages', 'long', '9223372036854775807', 'c', atLeast(1)],
  ['controller.socket.timeout.ms', 'int', '30000', 'r'],
  ['principal.builder.class', 'class', 'org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder', 'b'],
  ['log.flush.interval.ms', 'long', null, 'c'],
  ['controller.quorum.request.timeout.ms', 'int', '2000', 'r'],
  ['sasl.oauthbearer.expected.audience', 'list', null, 'r'],
  ['min.insync.replicas', 'int', '1', 'c', atLeast(1)],
  ['remote.log.manager.thread.pool.size', 'int', '2', 'r'],
  ['group.consumer.max.session.timeout.ms', 'int', '60000', 'r'],
  ['num.recovery.threads.per.data.dir', 'int', '2', 'c', atLeast(1)],
  ['ssl.keystore.type', 'string', 'JKS', 'b'],
  ['share.coordinator.state.topic.replication.factor', 'short', '3', 'r'],
  ['controller.quorum.bootstrap.servers', 'list', '', 'r'],
  ['sasl.mechanism.inter.broker.protocol', 'string', 'GSSAPI', 'b'],
  ['group.share.record.lock.duration.ms', 'int', '30000', 'r'],
  ['metadata.log.segment.bytes', 'int', '1073741824', 'r'],
  ['fetch.purgatory.purge.interval.requests', 'int', '1000', 'r'],
  ['ssl.endpoint.identification.algorithm', 'string', 'https', 'b'],
  ['replica.socket.timeout.ms', 'int', '30000', 'r'],
  ['message.max.bytes', 'int', '1048588', 'c', atLeast(0)],
  ['share.coordinator.state.topic.segment.bytes', 'int', '104857600', 'r'],
  ['remote.log.manager.fetch.max.bytes.per.second', 'long', '9223372036854775807', 'c', atLeast(1)],
  ['group.share.session.timeout.ms', 'int', '45000', 'r'],
  ['max.connection.creation.rate', 'int', '2147483647', 'c', atLeast(0)],
  ['connections.max.reauth.ms', 'long', '0', 'r'],
  ['share.coordinator.state.topic.min.isr', 'short', '2', 'r'],
  ['remote.log.manager.copy.quota.window.size.seconds', 'int', '1', 'r'],
  ['log.flush.offset.checkpoint.interval.ms', 'int', '60000', 'r'],
  ['quota.window.num', 'int', '11', 'r'],
  ['sasl.oauthbearer.clock.skew.seconds', 'int', '30', 'r'],
  ['group.consumer.min.session.timeout.ms', 'int', '45000', 'r'],
  ['authorizer.class.name', 'string', '', 'r'],
  ['num.replica.fetchers', 'int', '1', 'c'],
  ['alter.log.dirs.replication.quota.window.size.seconds', 'int', '1', 'r'],
  ['sasl.oauthbearer.jwks.endpoint.url', 'string', null, 'r'],
  ['remote.log.metadata.custom.metadata.max.bytes', 'int', '128', 'r'],
  ['log.roll.jitter.hours', 'int', '0', 'r'],
  ['telemetry.max.bytes', 'int', '1048576', 'r'],
  ['log.cleaner.delete.retention.ms', 'long', '86400000', 'c', atLeast(0)],
  ['sasl.login.retry.backoff.ms', 'long', '100', 'r'],
  ['queued.max.requests', 'int', '500', 'r'],
  ['log.cleaner.threads', 'int', '1', 'c', atLeast(0)],
  ['sasl.kerberos.service.name', 'string', null, 'b'],
  ['socket.request.max.bytes', 'int', '104857600', 'r'],
  ['group.consumer.max.size', 'int', '2147483647', 'r'],
  ['group.consumer.assignors', 'list', 'uniform,range', 'r'],
  ['remote.log.storage.system.enable', 'boolean', 'false', 'r'],
  ['log.message.timestamp.type', 'string', 'CreateTime', 'c', oneOf('CreateTime', 'LogAppendTime')],
  ['connections.max.idle.ms', 'long', '600000', 'r'],
  ['delegation.token.expiry.time.ms', 'long', '86400000', 'r'],
  ['max.connections', 'int', '2147483647', 'c', atLeast(0)],
  ['transaction.state.log.num.partitions', 'int', '50', 'r'],
  ['controller.quorum.election.timeout.ms', 'int', '1000', 'r'],
  ['listener.security.protocol.map', 'string', 'SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT', 'b'],
  ['log.retention.hours', 'int', '168', 'r'],
  ['client.quota.callback.class', 'class', null, 'r'],
  ['remote.log.storage.manager.impl.prefix', 'string', 'rsm.config.', 'r'],
  ['ssl.provider', 'string', null, 'b'],
  ['delete.records.purgatory.purge.interval.requests', 'int', '1', 'r'],
  ['producer.id.expiration.ms', 'int', '86400000', 'c', atLeast(1)],
  ['log.roll.ms', 'long', null, 'c'],
  ['ssl.cipher.suites', 'list', '', 'b'],
  ['controller.quorum.retry.backoff.ms', 'int', '20', 'r'],
  ['remote.log.manager.copy.max.bytes.per.second', 'long', '9223372036854775807', 'c', atLeast(1)],
  ['broker.session.timeout.ms', 'int', '9000', 'r'],
  ['security.inter.broker.protocol', 'string', 'PLAINTEXT', 'r'],
  ['group.share.heartbeat.interval.ms', 'int', '5000', 'r'],
  ['delegation.token.secret.key', 'password', null, 'r'],
  ['remote.log.manager.fetch.quota.window.num', 'int', '11', 'r'],
  ['remote.fetch.max.wait.ms', 'int', '500', 'c', atLeast(1)],
  ['node.id', 'int', null, 'r'],
  ['replica.high.watermark.checkpoint.interval.ms', 'long', '5000', 'r'],
  ['replication.quota.window.size.seconds', 'int', '1', 'r'],
  ['share.coordinator.append.linger.ms', 'int', '10', 'r'],
  ['log.local.retention.ms', 'long', '-2', 'c', atLeast(-2)],
  ['remote.log.reader.threads', 'int', '10', 'c', atLeast(1)],
  ['share.coordinator.snapshot.update.records.per.snapshot', 'int', '500', 'r'],
  ['sasl.kerberos.ticket.renew.window.factor', 'double', '0.8', 'b'],
  ['group.coordinator.threads', 'int', '4', 'r'],
  ['metrics.recording.level', 'string', 'INFO', 'r'],
  ['log.dir.failure.timeout.ms', 'long', '30000', 'r'],
  ['transaction.partition.verification.enable', 'boolean', 'true', 'c'],
  ['group.share.min.heartbeat.interval.ms', 'int', '5000', 'r'],
  ['ssl.principal.mapping.rules', 'string', 'DEFAULT', 'r'],
  ['replica.selector.class', 'string', null, 'r'],
  ['remote.log.manager.fetch.quota.window.size.seconds', 'int', '1', 'r'],
  ['max.connections.per.ip', 'int', '2147483647', 'c', atLeast(0)],
  ['background.threads', 'int', '10', 'c', atLeast(1)],
  ['request.timeout.ms', 'int', '30000', 'r'],
  ['add.partitions.to.txn.retry.backoff.ms', 'int', '20', 'r'],
  ['sasl.login.class', 'class', null, 'r'],
  ['remote.log.index.file.cache.total.size.bytes', 'long', '1073741824', 'c', atLeast(1)],
  ['log.dir', 'string', '/tmp/kafka-logs', 'r'],
  ['log.segment.bytes', 'int', '1073741824', 'c', atLeast(1048576)],
  ['replica.fetch.response.max.bytes', 'int', '10485760', 'r'],
  ['group.consumer.heartbeat.interval.ms', 'int', '5000', 'r'],
  ['group.max.session.timeout.ms', 'int', '1800000', 'r'],
  ['controller.listener.names', 'string', null, 'r'],
  ['log.message.timestamp.after.max.ms', 'long', '3600000', 'c', atLeast(0)],
  ['controller.quorum.append.linger.ms', 'int', '25', 'r'],
  ['log.segment.delete.delay.ms', 'long', '60000', 'c', atLeast(0)],
  ['log.retention.minutes', 'int', null, 'r'],
  ['log.dirs', 'string', null, 'r'],
  ['controlled.shutdown.enable', 'boolean', 'true', 'r'],
  ['share.coordinator.state.topic.compression.codec', 'int', '0', 'r'],
  ['early.start.listeners', 'string', null, 'r'],
  ['log.message.timestamp.before.max.ms', 'long', '9223372036854775807', 'c', atLeast(0)],
  ['remote.log.manager.copier.thread.pool.size', 'int', '10', 'c', atLeast(1)],
  ['socket.connection.setup.timeout.max.ms', 'long', '30000', 'r'],
  ['sasl.oauthbearer.scope.claim.name', 'string', 'scope', 'r'],
  ['sasl.login.refresh.min.period.seconds', 'short', '60', 'b'],
  ['sasl.oauthbearer.expected.issuer', 'string', null, 'r'],
  ['sasl.login.read.timeout.ms', 'int', null, 'r'],
  ['transaction.abort.timed.out.transaction.cleanup.interval.ms', 'int', '10000', 'r'],
  ['sasl.kerberos.kinit.cmd', 'string', '/usr/bin/kinit', 'b'],
  ['log.cleaner.io.max.bytes.per.second', 'double', '1.7976931348623157E308', 'c'],
  ['auto.leader.rebalance.enable', 'boolean', 'true', 'r'],
  ['leader.imbalance.check.interval.seconds', 'long', '300', 'r'],
  ['log.cleaner.min.cleanable.ratio', 'double', '0.5', 'c', between(0, 1)],
  ['group.share.min.record.lock.duration.ms', 'int', '15000', 'r'],
  ['replica.lag.time.max.ms', 'long', '30000', 'r'],
  ['num.network.threads', 'int', '3', 'c', atLeast(1)],
  ['group.share.min.session.timeout.ms', 'int', '45000', 'r'],
  ['ssl.keystore.key', 'password', null, 'b'],
  ['sasl.client.callback.handler.class', 'class', null, 'r'],
  ['compression.gzip.level', 'int', '-1', 'c', GZIP_LEVEL],
  ['metrics.num.samples', 'int', '2', 'r'],
  ['socket.send.buffer.bytes', 'int', '102400', 'r'],
  ['group.coordinator.rebalance.protocols', 'list', 'classic,consumer', 'r'],
  ['remote.log.storage.manager.class.name', 'string', null, 'r'],
  ['socket.receive.buffer.bytes', 'int', '102400', 'r'],
  ['sasl.oauthbearer.sub.claim.name', 'string', 'sub', 'r'],
  ['replica.fetch.min.bytes', 'int', '1', 'r'],
  ['broker.rack', 'string', null, 'r'],
  ['unclean.leader.election.enable', 'boolean', 'false', 'c'],
  ['sasl.oauthbearer.jwks.endpoint.retry.backoff.ms', 'long', '100', 'r'],
  ['offsets.retention.check.interval.ms', 'long', '600000', 'r'],
  ['producer.purgatory.purge.interval.requests', 'int', '1000', 'r'],
  ['controller.quorum.voters', 'list', '', 'r'],
  ['metrics.sample.window.ms', 'long', '30000', 'r'],
  ['log.retention.check.interval.ms', 'long', '300000', 'r'],
  ['group.consumer.session.timeout.ms', 'int', '45000', 'r'],
  ['sasl.login.refresh.window.jitter', 'double', '0.05', 'b'],
  ['controller.quota.window.num', 'int', '11', 'r'],
  ['metric.reporters', 'list', 'org.apache.kafka.common.metrics.JmxReporter', 'c'],
  ['sasl.oauthbearer.token.endpoint.url', 'string', null, 'r'],
  ['auto.create.topics.enable', 'boolean', 'true', 'r'],
  ['group.share.partition.max.record.locks', 'int', '2000', 'r'],
  ['ssl.engine.factory.class', 'class', null, 'b'],
  ['replica.socket.receive.buffer.bytes', 'int', '65536', 'r'],
  ['ssl.allow.dn.changes', 'boolean', 'false', 'r'],
  ['replica.fetch.wait.max.ms', 'int', '500', 'r'],
  ['group.consumer.min.heartbeat.interval.ms', 'int', '5000', 'r'],
  ['default.replication.factor', 'int', '1', 'r'],
  ['ssl.truststore.password', 'password', null, 'b'],
  ['sasl.kerberos.principal.to.local.rules', 'list', 'DEFAULT', 'b'],
  ['log.preallocate', 'boolean', 'false', 'c'],
  ['remote.log.reader.max.pending.tasks', 'int', '100', 'r'],
  ['transactional.id.expiration.ms', 'int', '604800000', 'r'],
  ['transaction.state.log.replication.factor', 'short', '3', 'r'],
  ['num.io.threads', 'int', '8', 'c', atLeast(1)],
  ['sasl.login.refresh.buffer.seconds', 'short', '300', 'b'],
  ['group.share.max.heartbeat.interval.ms', 'int', '15000', 'r'],
  ['connection.failed.authentication.delay.ms', 'int', '100', 'r'],
  ['share.coordinator.write.timeout.ms', 'int', '5000', 'r'],
  ['delete.topic.enable', 'boolean', 'true', 'r'],
  ['quota.window.size.seconds', 'int', '1', 'r'],
  ['ssl.truststore.type', 'string', 'JKS', 'b'],
  ['offsets.commit.timeout.ms', 'int', '5000', 'r'],
  ['broker.heartbeat.interval.ms', 'int', '2000', 'r'],
  ['group.share.max.record.lock.duration.ms', 'int', '60000', 'r'],
  ['sasl.mechanism.controller.protocol', 'string', 'GSSAPI', 'r'],
  ['log.cleaner.max.compaction.lag.ms', 'long', '9223372036854775807', 'c', atLeast(1)],
  ['remote.log.storage.manager.class.path', 'string', null, 'r'],
  ['log.retention.ms', 'long', null, 'c'],
  ['share.fetch.purgatory.purge.interval.requests', 'int', '1000', 'r'],
  ['alter.log.dirs.replication.quota.window.num', 'int', '11', 'r'],
  ['log.cleaner.enable', 'boolean', 'true', 'r'],
  ['controller.quorum.fetch.timeout.ms', 'int', '2000', 'r'],
  ['offsets.load.buffer.size', 'int', '5242880', 'r'],
  ['ssl.client.auth', 'string', 'none', 'b', oneOf('required', 'requested', 'none')],
  ['offsets.topic.replication.factor', 'short', '3', 'r'],
  ['transaction.state.log.min.isr', 'int', '2', 'r'],
  ['ssl.secure.random.implementation', 'string', null, 'b'],
  ['sasl.kerberos.ticket.renew.jitter', 'double', '0.05', 'b'],
  ['ssl.trustmanager.algorithm', 'string', 'PKIX', 'b'],
  ['log.local.retention.bytes', 'long', '-2', 'c', atLeast(-2)],
  ['log.retention.bytes', 'long', '-1', 'c'],
  ['controller.quota.window.size.seconds', 'int', '1', 'r'],
  ['remote.log.metadata.manager.impl.prefix', 'string', 'rlmm.config.', 'r'],
  ['sasl.jaas.config', 'password', null, 'b'],
  ['share.coordinator.state.topic.num.partitions', 'int', '50', 'r'],
  ['sasl.kerberos.min.time.before.relogin', 'long', '60000', 'b'],
  ['offsets.retention.minutes', 'int', '10080', 'r'],
  ['replica.fetch.backoff.ms', 'int', '1000', 'r'],
  ['kafka.metrics.reporters', 'list', '', 'r'],
  ['group.share.delivery.count.limit', 'int', '5', 'r'],
  ['ssl.allow.san.changes', 'boolean', 'false', 'r'],
  ['compression.zstd.level', 'int', '3', 'c', between(-131072, 22)],
  ['remote.log.manager.copy.quota.window.num', 'int', '11', 'r'],
  ['num.partitions', 'int', '1', 'r'],
  ['ssl.keystore.certificate.chain', 'password', null, 'b'],
  ['socket.connection.setup.timeout.ms', 'long', '10000', 'r'],
  ['listeners', 'string', 'PLAINTEXT://:9092', 'b'],
  ['ssl.enabled.protocols', 'list', 'TLSv1.2,TLSv1.3', 'b'],
  ['inter.broker.listener.name', 'string', null, 'r'],
  ['alter.config.policy.class.name', 'class', null, 'r'],
  ['delegation.token.expiry.check.interval.ms', 'long', '3600000', 'r'],
  ['log.flush.scheduler.interval.ms', 'long', '9223372036854775807', 'r'],
  ['remote.log.manager.expiration.thread.pool.size', 'int', '10', 'c', atLeast(1)],
  ['log.index.size.max.bytes', 'int', '10485760', 'c', atLeast(4)],
  ['ssl.keymanager.algorithm', 'string', 'SunX509', 'b'],
  ['sasl.login.callback.handler.class', 'class', null, 'r'],
  ['replica.fetch.max.bytes', 'int', '1048576', 'r'],
  ['sasl.server.callback.handler.class', 'class', null, 'r'],
  ['group.share.max.groups', 'short', '10', 'r'],
  ['log.cleaner.dedupe.buffer.size', 'long', '134217728', 'c'],
  ['log.cleaner.io.buffer.size', 'int', '524288', 'c', atLeast(0)],
  ['create.topic.policy.class.name', 'class', null, 'r'],
  ['ssl.truststore.certificates', 'password', null, 'b'],
  ['socket.listen.backlog.size', 'int', '50', 'r'],
  ['sasl.server.max.receive.size', 'int', '524288', 'r'],
  ['security.providers', 'string', null, 'r'],
  ['share.coordinator.threads', 'int', '1', 'r'],
  ['metadata.log.max.snapshot.interval.ms', 'long', '3600000', 'r'],
  ['compression.lz4.level', 'int', '9', 'c', between(1, 17)],
  ['log.roll.hours', 'int', '168', 'r'],
  ['log.cleanup.policy', 'list', 'delete', 'c', listOf('compact', 'delete')],
  ['initial.broker.registration.timeout.ms', 'int', '60000', 'r'],
  ['log.flush.start.offset.checkpoint.interval.ms', 'int', '60000', 'r'],
  ['log.roll.jitter.ms', 'long', null, 'c'],
  ['transaction.state.log.segment.bytes', 'int', '104857600', 'r'],
  ['offsets.topic.segment.bytes', 'int', '104857600', 'r'],
  ['metadata.max.idle.interval.ms', 'int', '500', 'r'],
  ['remote.log.metadata.manager.class.name', 'string', 'org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager', 'r'],
  ['sasl.login.retry.backoff.max.ms', 'long', '10000', 'r'],
  ['remote.log.manager.task.interval.ms', 'long', '30000', 'r'],
  ['group.initial.rebalance.delay.ms', 'int', '3000', 'r'],
  ['log.index.interval.bytes', 'int', '4096', 'c', atLeast(0)],
  ['log.cleaner.backoff.ms', 'long', '15000', 'c', atLeast(0)],
  ['share.coordinator.load.buffer.size', 'int', '5242880', 'r'],
  ['ssl.truststore.location', 'string', null, 'b'],
  ['offset.metadata.max.bytes', 'int', '4096', 'r'],
  ['ssl.keystore.password', 'password', null, 'b'],
  ['fetch.max.bytes', 'int', '57671680', 'r'],
  ['metadata.max.retention.bytes', 'long', '104857600', 'r'],
  ['compression.type', 'string', 'producer', 'c', oneOf('uncompressed', 'zstd', 'lz4', 'snappy', 'gzip', 'producer')],
  ['sasl.login.connect.timeout.ms', 'int', null, 'r'],
  ['max.connections.per.ip.overrides', 'string', '', 'c'],
  ['group.consumer.max.heartbeat.interval.ms', 'int', '15000', 'r'],
  ['sasl.login.refresh.window.factor', 'double', '0.8', 'b'],
  ['remote.log.metadata.manager.class.path', 'string', null, 'r'],
  ['kafka.metrics.polling.interval.secs', 'int', '10', 'r'],
  ['add.partitions.to.txn.retry.backoff.max.ms', 'int', '100', 'r'],
  ['metadata.log.max.record.bytes.between.snapshots', 'long', '20971520', 'r'],
  ['metadata.max.retention.ms', 'long', '604800000', 'r'],
  ['controller.quorum.election.backoff.max.ms', 'int', '1000', 'r'],
  ['group.share.max.size', 'int', '200', 'r'],
  ['max.incremental.fetch.session.cache.slots', 'int', '1000', 'r'],
  ['ssl.key.password', 'password', null, 'b'],
  ['transaction.remove.expired.transaction.cleanup.interval.ms', 'int', '3600000', 'r'],
  ['ssl.protocol', 'string', 'TLSv1.3', 'b'],
  ['group.consumer.migration.policy', 'string', 'bidirectional', 'r'],
  ['metadata.log.segment.ms', 'long', '604800000', 'r'],
  ['transaction.state.log.load.buffer.size', 'int', '5242880', 'r'],
  ['ssl.keystore.location', 'string', null, 'b'],
  ['group.coordinator.append.linger.ms', 'int', '5', 'r'],
  ['remote.list.offsets.request.timeout.ms', 'long', '30000', 'c', atLeast(1)],
  ['sasl.enabled.mechanisms', 'list', 'GSSAPI', 'b'],
  ['num.replica.alter.log.dirs.threads', 'int', null, 'r'],
  ['group.share.max.session.timeout.ms', 'int', '60000', 'r'],
  ['group.min.session.timeout.ms', 'int', '6000', 'r'],
  ['log.cleaner.io.buffer.load.factor', 'double', '0.9', 'c'],
  ['transaction.max.timeout.ms', 'int', '900000', 'r'],
  ['metadata.log.dir', 'string', null, 'r'],
  ['process.roles', 'list', null, 'r'],
  ['group.max.size', 'int', '2147483647', 'r'],
  ['sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms', 'long', '10000', 'r'],
  ['delegation.token.max.lifetime.ms', 'long', '604800000', 'r'],
  ['max.request.partition.size.limit', 'int', '2000', 'r'],
  ['broker.id', 'int', '-1', 'r'],
  ['offsets.topic.compression.codec', 'int', '0', 'r'],
  ['replication.quota.window.num', 'int', '11', 'r'],
  ['advertised.listeners', 'string', null, 'r'],
  ['queued.max.request.bytes', 'long', '-1', 'r'],
  // Group settings Kafka added by 4.4 that bound or default the group configs (cluster/group/group-configs.ts).
  ['group.consumer.min.assignment.interval.ms', 'int', '0', 'r'],
  ['group.consumer.max.assignment.interval.ms', 'int', '15000', 'r'],
  ['group.share.assignment.interval.ms', 'int', '1000', 'r'],
  ['group.share.min.assignment.interval.ms', 'int', '0', 'r'],
  ['group.share.max.assignment.interval.ms', 'int', '15000', 'r'],
  ['group.share.min.delivery.count.limit', 'int', '2', 'r'],
  ['group.share.max.delivery.count.limit', 'int', '10', 'r'],
  ['group.share.min.partition.max.record.locks', 'int', '100', 'r'],
  ['group.share.max.partition.max.record.locks', 'int', '4000', 'r'],
  ['group.streams.session.timeout.ms', 'int', '45000', 'r'],
  ['group.streams.min.session.timeout.ms', 'int', '45000', 'r'],
  ['group.streams.max.session.timeout.ms', 'int', '60000', 'r'],
  ['group.streams.heartbeat.interval.ms', 'int', '5000', 'r'],
  ['group.streams.min.heartbeat.interval.ms', 'int', '5000', 'r'],
  ['group.streams.max.heartbeat.interval.ms', 'int', '15000', 'r'],
  ['group.streams.max.size', 'int', '2147483647', 'r'],
  ['group.streams.num.standby.replicas', 'int', '0', 'r'],
  ['group.streams.max.standby.replicas', 'int', '2', 'r'],
  ['group.streams.initial.rebalance.delay.ms', 'int', '3000', 'r'],
  ['group.streams.assignment.interval.ms', 'int', '1000', 'r'],
  ['group.streams.min.assignment.interval.ms', 'int', '0', 'r'],
  ['group.streams.max.assignment.interval.ms', 'int', '15000', 'r'],
  ['group.streams.assignors', 'list', 'sticky', 'r'],
  ['group.streams.rack.aware.assignment.tags', 'list', '', 'r'],
  // Kafka 4.4's internal group settings that internal group configs fall back to or are bounded by.
  ['group.consumer.assignor.offload.enable', 'boolean', 'true', 'ri'],
  ['group.share.assignor.offload.enable', 'boolean', 'true', 'ri'],
  ['group.streams.assignor.offload.enable', 'boolean', 'true', 'ri'],
  ['group.streams.task.offset.interval.ms', 'int', '60000', 'ri'],
  ['group.streams.min.task.offset.interval.ms', 'int', '15000', 'ri'],
  ['group.streams.num.warmup.replicas', 'int', '2', 'ri'],
  ['group.streams.max.warmup.replicas', 'int', '20', 'ri'],
  ['group.streams.acceptable.recovery.lag', 'long', '10000', 'ri'],
  ['remote.log.manager.task.retry.backoff.ms', 'long', '500', 'ri'],
  ['remote.log.manager.task.retry.backoff.max.ms', 'long', '30000', 'ri'],
  ['remote.log.manager.task.retry.jitter', 'double', '0.2', 'ri'],
  ['unstable.api.versions.enable', 'boolean', 'false', 'ri'],
  ['unstable.feature.versions.enable', 'boolean', 'false', 'ri'],
  ['metadata.log.segment.min.bytes', 'int', '8388608', 'ri'],
  ['controller.performance.sample.period.ms', 'long', '60000', 'ri'],
  ['controller.performance.always.log.threshold.ms', 'long', '2000', 'ri'],
  ['server.max.startup.time.ms', 'long', '9223372036854775807', 'ri'],
  ['unclean.leader.election.interval.ms', 'long', '300000', 'ri'],
  ['group.coordinator.new.enable', 'boolean', 'true', 'ri'],
  ['log.initial.task.delay.ms', 'long', '30000', 'ri'],
  ['group.share.enable', 'boolean', 'false', 'ri'],
  ['share.fetch.max.fetch.records', 'int', '2147483647', 'ri'],
  ['group.share.persister.class.name', 'string', 'org.apache.kafka.server.share.persister.DefaultStatePersister', 'ri'],
  ['share.coordinator.state.topic.prune.interval.ms', 'int', '300000', 'ri'],
  ['producer.id.expiration.check.interval.ms', 'int', '600000', 'ri'],
  // Settable only dynamically (no static form): replication throttles.
  ['leader.replication.throttled.rate', 'long', '9223372036854775807', 'c', atLeast(0)],
  ['follower.replication.throttled.rate', 'long', '9223372036854775807', 'c', atLeast(0)],
  ['replica.alter.log.dirs.io.max.bytes.per.second', 'long', '9223372036854775807', 'c', atLeast(0)],
];

export type DynamicMode = 'read-only' | 'cluster-wide' | 'per-broker';

export interface BrokerConfigDef {
  readonly name: string;
  readonly type: ConfigType;
  /** Kafka's default, as DescribeConfigs shows it; null when there is none. */
  readonly default: string | null;
  /** How Kafka 4.0 lets it change at run time. */
  readonly kafkaMode: DynamicMode;
  readonly check?: ValueCheck;
}

const KAFKA_DEFS: ReadonlyMap<string, BrokerConfigDef> = new Map(
  KAFKA_BROKER_CONFIGS.map(([name, type, dflt, mode, check]): [string, BrokerConfigDef] => [
    name,
    { name, type, default: dflt, kafkaMode: mode === 'c' ? 'cluster-wide' : mode === 'b' ? 'per-broker' : 'read-only', ...(check ? { check } : {}) },
  ]),
);

/** Kafka's facts about a broker config, or undefined for a name Kafka's broker does not define. */
export function kafkaBrokerConfig(name: string): BrokerConfigDef | undefined {
  return KAFKA_DEFS.get(name);
}

/** Kafka's order of broker configs, for listing: a name's position, or Infinity for names Kafka does not list. */
export const KAFKA_LIST_ORDER: ReadonlyMap<string, number> = new Map(KAFKA_BROKER_CONFIGS.map(([name], i) => [name, i]));

/**
 * Broker configs that are several names for one setting: the value of the
 * first one set wins, and DescribeConfigs lists them as synonyms of each
 * other, in this order.
 */
const SYNONYM_GROUPS: readonly (readonly string[])[] = [
  ['log.retention.ms', 'log.retention.minutes', 'log.retention.hours'],
  ['log.roll.ms', 'log.roll.hours'],
  ['log.roll.jitter.ms', 'log.roll.jitter.hours'],
];

/**
 * The broker configs DescribeConfigs considers synonyms of `name`, in Kafka's
 * order: its group (SYNONYM_GROUPS), log.flush.interval.ms with the
 * scheduler interval it falls back to, else the name alone.
 *
 * Example: brokerSynonyms('log.retention.hours') -> ['log.retention.ms',
 * 'log.retention.minutes', 'log.retention.hours'].
 */
export function brokerSynonyms(name: string): readonly string[] {
  for (const group of SYNONYM_GROUPS) if (group.includes(name)) return group;
  if (name === 'log.flush.interval.ms') return ['log.flush.interval.ms', 'log.flush.scheduler.interval.ms'];
  return [name];
}

/**
 * Broker configs of the log manager that gregor runs with Kafka's defaults,
 * listed for a broker beside the topic-config defaults. Our own words.
 */
const LOG_MANAGER_DOCS: ReadonlyMap<string, string> = new Map([
  ['log.retention.check.interval.ms', 'How often every log is checked for segments past retention.'],
  ['log.cleaner.enable', 'Whether logs with cleanup.policy compact are compacted.'],
  ['log.cleaner.backoff.ms', 'How long the log cleaner sleeps when no log needs compacting.'],
  ['log.flush.offset.checkpoint.interval.ms', 'How often each log writes its recovery checkpoint.'],
]);

/**
 * The Kafka broker configs a broker resource lists besides gregor's own keys
 * (src/config.ts): the broker-wide default of every topic config, and the
 * log manager settings above. Listing Kafka's other configs (SSL, SASL,
 * KRaft, quotas, ...) would claim settings gregor does not have.
 */
export const LISTED_BROKER_CONFIGS: readonly string[] = [...new Set([...TOPIC_CONFIGS_BY_SERVER_NAME.keys(), ...LOG_MANAGER_DOCS.keys()])];

const UNIT_NOTE: ReadonlyMap<string, string> = new Map([
  ['log.retention.minutes', ' In minutes; used when log.retention.ms is not set.'],
  ['log.retention.hours', ' In hours; used when log.retention.ms and log.retention.minutes are not set.'],
  ['log.roll.hours', ' In hours; used when log.roll.ms is not set.'],
  ['log.roll.jitter.hours', ' In hours; used when log.roll.jitter.ms is not set.'],
  ['log.flush.scheduler.interval.ms', ' Used for flush.ms when log.flush.interval.ms is not set.'],
]);

/**
 * gregor's description of a Kafka broker config it lists: a topic config
 * default says which topic config it gives; null for the rest.
 *
 * Example: brokerConfigDoc('log.retention.hours') -> 'Default of retention.ms
 * for topics without their own: ... In hours; used when ...'.
 */
export function brokerConfigDoc(name: string): string | null {
  const topics = TOPIC_CONFIGS_BY_SERVER_NAME.get(name);
  if (topics !== undefined) {
    const first = topicConfigDef(topics[0]!)!;
    return `Default of ${topics.join(', ')} for topics without their own: ${first.doc}${UNIT_NOTE.get(name) ?? ''}`;
  }
  return LOG_MANAGER_DOCS.get(name) ?? null;
}

/**
 * How gregor lets `name` change at run time. Kafka's cluster-wide dynamic
 * configs are taken (those that give topic configs their defaults apply to
 * every log at once; the others are stored and listed, as Kafka stores names
 * it does not know). Refused as read-only: Kafka's read-only configs,
 * Kafka's per-broker ones (listeners, TLS and SASL: gregor binds its
 * listeners once and has neither), and gregor's own start-up keys
 * (`staticKeys`) that are not topic-config defaults. A name neither Kafka nor
 * gregor knows is 'unknown': taken and stored, as Kafka does.
 *
 * Example: dynamicMode('log.retention.ms', keys) -> 'cluster-wide';
 * dynamicMode('num.partitions', keys) -> 'read-only'; dynamicMode('x.y', keys)
 * -> 'unknown'.
 */
export function dynamicMode(name: string, staticKeys: ReadonlySet<string>): DynamicMode | 'unknown' {
  const kafka = KAFKA_DEFS.get(name);
  if (TOPIC_CONFIGS_BY_SERVER_NAME.has(name)) return kafka?.kafkaMode === 'cluster-wide' ? 'cluster-wide' : 'read-only';
  if (staticKeys.has(name) || name.startsWith('listener.name.')) return 'read-only';
  if (kafka === undefined) return 'unknown';
  return kafka.kafkaMode === 'cluster-wide' ? 'cluster-wide' : 'read-only';
}
