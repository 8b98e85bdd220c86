package dev.lagsight.harness;

import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.streaming.api.datastream.DataStreamSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.connectors.kafka.FlinkKafkaConsumer;

/**
 * The legacy {@code FlinkKafkaConsumer} source of a job ({@code connector=legacy}), as jobs on the
 * Flink 1.x connector line still run it. Compiled only for that line (pom-1.20.xml adds this
 * source root; the 2.x connector no longer has the class); KafkaLagJob finds it by reflection.
 *
 * <p>It honours the job spec's keys as the KafkaSource does: group (group.id), start
 * (committed = the group's offsets, else earliest; earliest; latest), commit (commit on
 * checkpoints), kafka.PROP, and the watermarks. Without checkpointing it leaves committing to
 * the Kafka client ({@code enable.auto.commit}, true unless kafka.enable.auto.commit=false), as
 * the connector does.
 */
public final class LegacyKafkaSource {

    private LegacyKafkaSource() {}

    public static DataStreamSource<String> add(StreamExecutionEnvironment env, Map<String, String> values,
            List<String> topics, String bootstrap, WatermarkStrategy<String> watermarks,
            String sourceName) {
        Properties properties = new Properties();
        properties.setProperty("bootstrap.servers", bootstrap);
        properties.setProperty("auto.offset.reset", "earliest");
        String group = values.getOrDefault("group", "");
        if (!group.isEmpty()) {
            properties.setProperty("group.id", group);
        }
        for (Map.Entry<String, String> entry : values.entrySet()) {
            if (entry.getKey().startsWith("kafka.")) {
                properties.setProperty(entry.getKey().substring("kafka.".length()), entry.getValue());
            }
        }
        if (values.containsKey("discovery-ms")) {
            properties.setProperty("flink.partition-discovery.interval-millis",
                    values.get("discovery-ms"));
        }
        FlinkKafkaConsumer<String> consumer =
                new FlinkKafkaConsumer<>(topics, new SimpleStringSchema(), properties);
        String start = values.getOrDefault("start", "committed");
        switch (start) {
            case "committed":
                consumer.setStartFromGroupOffsets();
                break;
            case "earliest":
                consumer.setStartFromEarliest();
                break;
            case "latest":
                consumer.setStartFromLatest();
                break;
            default:
                throw new IllegalArgumentException("bad start=" + start);
        }
        consumer.setCommitOffsetsOnCheckpoints(
                Boolean.parseBoolean(values.getOrDefault("commit", "true")));
        consumer.assignTimestampsAndWatermarks(watermarks);
        return env.addSource(consumer, sourceName);
    }
}
