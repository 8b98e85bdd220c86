// A share consumer (KIP-932) that acknowledges at a set pace, for
// tests/integration/test_share_groups.py. Run from source by `java` (no build step):
//   java -cp <Kafka 4.3+ classpath> ShareConsumerApp.java <bootstrap> <topic> <group> <client id>
//       <records per second>
// It acquires at most one second's worth of records a poll (share.acquire.mode=record_limit), so
// nothing it holds outlives the acquisition lock, and acknowledges them implicitly at the next
// poll. Runs until it is terminated; closes (leaving the group, releasing what it holds) on
// SIGTERM.

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareConsumerApp {
  public static void main(String[] args) throws Exception {
    int perSecond = Integer.parseInt(args[4]);
    Properties properties = new Properties();
    properties.put("bootstrap.servers", args[0]);
    properties.put("group.id", args[2]);
    properties.put("client.id", args[3]);
    properties.put("share.acquire.mode", "record_limit");
    properties.put("max.poll.records", Integer.toString(perSecond));
    KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(
        properties, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    AtomicBoolean running = new AtomicBoolean(true);
    CountDownLatch closed = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      running.set(false);
      consumer.wakeup();
      try {
        closed.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }));
    long pauseMs = 1000L / perSecond;
    try {
      consumer.subscribe(List.of(args[1]));
      while (running.get()) {
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
          Thread.sleep(pauseMs);  // the work each record takes
        }
      }
    } catch (WakeupException e) {
      // terminated: close below
    } finally {
      consumer.close();
      closed.countDown();
    }
  }
}
