// A Kafka Streams application that joins a streams group (KIP-1071, group.protocol=streams), for
// tests/integration/test_streams_groups.py. Run from source by `java` (no build step):
//   java -cp <Kafka 4.2+ classpath> StreamsGroupApp.java <properties file> <input> <output>
// It counts the records of <input> by value; re-keying first makes Kafka Streams repartition, so
// the topology has two subtopologies: one reading <input>, one reading the repartition topic.
// Runs until it is terminated; closes (leaving the group) on SIGTERM.

import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;

public class StreamsGroupApp {
  public static void main(String[] args) throws Exception {
    Properties properties = new Properties();
    try (Reader reader = Files.newBufferedReader(Path.of(args[0]))) {
      properties.load(reader);
    }
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(args[1], Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
        .selectKey((key, value) -> value)
        .groupByKey(Grouped.with(Serdes.ByteArray(), Serdes.ByteArray()))
        .count()
        .toStream()
        .to(args[2], Produced.with(Serdes.ByteArray(), Serdes.Long()));
    KafkaStreams streams = new KafkaStreams(builder.build(), properties);
    CountDownLatch closed = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      streams.close();
      closed.countDown();
    }));
    streams.start();
    closed.await();
  }
}
