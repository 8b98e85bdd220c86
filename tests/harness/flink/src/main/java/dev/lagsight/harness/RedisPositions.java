package dev.lagsight.harness;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import redis.clients.jedis.Jedis;

/**
 * The pattern of jobs that keep their Kafka position outside Kafka: each record carries its
 * topic, partition and offset through the pipeline, and the job's last step before the sink
 * writes, per partition, the next offset to read into a Redis hash ({@code HSET key partition
 * offset+1}, plus an {@code updated_at} field in unix milliseconds) every write-back period. A
 * restart would read the hash back into {@code setStartingOffsets}. One connection per subtask.
 */
final class RedisPositions {

    private RedisPositions() {}

    private static final char SEP = '\u0000';

    /** Prefixes each record's value with "topic NUL partition NUL offset NUL". */
    static final class WithPosition implements KafkaRecordDeserializationSchema<String> {
        private static final long serialVersionUID = 1L;

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<String> out)
                throws IOException {
            String value = record.value() == null ? "" : new String(record.value(), StandardCharsets.UTF_8);
            out.collect(record.topic() + SEP + record.partition() + SEP + record.offset() + SEP + value);
        }

        @Override
        public TypeInformation<String> getProducedType() {
            return Types.STRING;
        }
    }

    /**
     * Remembers the next offset per topic-partition and writes what changed every period, from a
     * daemon thread of its own (so the last records are written even when no more arrive).
     */
    static final class Writer implements MapFunction<String, String> {
        private static final long serialVersionUID = 1L;

        private final String host;
        private final int port;
        private final String keyTemplate;
        private final long periodMillis;
        private transient Map<String, Map<String, String>> pending;

        Writer(String address, String keyTemplate, long periodMillis) {
            int colon = address.lastIndexOf(':');
            this.host = address.substring(0, colon);
            this.port = Integer.parseInt(address.substring(colon + 1));
            this.keyTemplate = keyTemplate;
            this.periodMillis = periodMillis;
        }

        @Override
        public String map(String record) {
            int first = record.indexOf(SEP);
            int second = record.indexOf(SEP, first + 1);
            int third = record.indexOf(SEP, second + 1);
            String topic = record.substring(0, first);
            String partition = record.substring(first + 1, second);
            long offset = Long.parseLong(record.substring(second + 1, third));
            if (pending == null) {
                pending = new HashMap<>();
                Thread flusher = new Thread(this::flushEveryPeriod, "redis-positions");
                flusher.setDaemon(true);
                flusher.start();
            }
            synchronized (pending) {
                pending.computeIfAbsent(keyTemplate.replace("{topic}", topic), k -> new HashMap<>())
                        .put(partition, Long.toString(offset + 1));
            }
            return record.substring(third + 1);
        }

        private void flushEveryPeriod() {
            Jedis jedis = null;
            while (true) {
                try {
                    Thread.sleep(periodMillis);
                    Map<String, Map<String, String>> batch;
                    synchronized (pending) {
                        batch = new HashMap<>(pending);
                        pending.clear();
                    }
                    if (batch.isEmpty()) {
                        continue;
                    }
                    if (jedis == null) {
                        jedis = new Jedis(host, port);
                    }
                    String now = Long.toString(System.currentTimeMillis());
                    for (Map.Entry<String, Map<String, String>> hash : batch.entrySet()) {
                        Map<String, String> fields = new HashMap<>(hash.getValue());
                        fields.put("updated_at", now);
                        jedis.hset(hash.getKey(), fields);
                    }
                } catch (InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    // Redis away: this batch is lost, the next one carries newer offsets.
                    if (jedis != null) {
                        jedis.close();
                    }
                    jedis = null;
                }
            }
        }
    }
}
