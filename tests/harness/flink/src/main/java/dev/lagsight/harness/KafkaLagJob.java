package dev.lagsight.harness;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;

/**
 * A Flink session in one JVM for lagsight's tests: an in-process MiniCluster whose REST endpoint
 * listens on 127.0.0.1, running one or more small streaming jobs that read Kafka with
 * {@code KafkaSource}, slow each record down by a configurable delay, and discard the result.
 *
 * <p>The same source compiles against Flink 1.20 and Flink 2.x (it uses only APIs present in
 * both). Jobs are submitted over the REST endpoint, as a client of a real session cluster would.
 *
 * <h2>Arguments</h2>
 *
 * <pre>
 * --rest-port P          REST port on 127.0.0.1 (0, the default: any free port)
 * --bootstrap HOST:PORT  Kafka bootstrap servers, the default of every job
 * --savepoint-dir DIR    state.savepoints.dir (savepoints triggered over REST go there)
 * --checkpoint-dir DIR   keep checkpoints in files under DIR (default: in JobManager memory)
 * --slots N              task slots of the single TaskManager (default: sum of parallelisms + 2)
 * --conf KEY=VALUE       any Flink configuration option of the cluster; repeatable, applied last
 * --job SPEC             one job; repeat for more jobs in the same cluster
 * </pre>
 *
 * <p>A job SPEC is a comma-separated list of {@code key=value}:
 *
 * <pre>
 * name=NAME                  job name (required)
 * topic=T                    topic to read; repeat the key for several topics (required)
 * group=G                    consumer group id; empty or absent: none (Flink then commits nothing)
 * start=committed|earliest|latest   starting offsets (default committed: committed, else earliest)
 * commit=true|false          commit.offsets.on.checkpoint (default true; without a group
 *                            the connector's own default, which is off)
 * checkpoint=MS              checkpoint interval in ms; 0 disables checkpointing (default 1000)
 * tolerable-failures=N       tolerable failed checkpoints (default Flink's, or unlimited
 *                            when fail-checkpoints-file is given)
 * parallelism=N              parallelism of every operator (default 1)
 * delay-us=N                 sleep at least N microseconds per record in the map (default 0)
 * delay-file=PATH            while PATH exists, its integer content replaces delay-us
 * then-delay-us=N            a second map after the first, its own vertex (NAME-enrich, or
 *                            then=NAME), sleeping at least N microseconds per record: the slow
 *                            operator one step further downstream
 *                            (re-read every 500 ms): lets a test slow down or speed up a job
 * fail-checkpoints-file=PATH while PATH exists, every checkpoint fails in its asynchronous
 *                            part (the job keeps running; the failure counts against
 *                            tolerable-failures)
 * fail-records-file=PATH     while PATH exists, the map throws on every record: a task failure,
 *                            and Flink restarts the job by its restart strategy (a failover;
 *                            a restart loop for as long as PATH stays)
 * fail-once-file=PATH        when PATH appears, the first record that sees it deletes it and
 *                            throws: exactly one task failure (a single failover)
 * min-pause=MS               execution.checkpointing.min-pause (default Flink's, 0)
 * source=NAME                source operator name (default NAME-source); also its uid
 * map=NAME                   map operator name (default NAME-map); also its uid
 * sink=NAME                  sink name (default NAME-sink)
 * bootstrap=HOST:PORT        overrides --bootstrap; several addresses are joined by '|' (a
 *                            spec separates its items by ','), e.g. a list naming two clusters
 * restore=PATH               start from this savepoint or retained checkpoint
 * allow-non-restored=true    allow state in the savepoint that no operator claims
 * discovery-ms=MS            partition discovery interval (default: the connector's)
 * watermarks=monotonous|none event time from the Kafka record timestamps (default) or none
 * chain=true|false           chain the source with the map (default false: the source is its
 *                            own vertex, so a slow map backpressures it)
 * kafka.PROP=VALUE           any Kafka consumer property of the source (e.g.
 *                            kafka.max.poll.records=10)
 * redis=HOST:PORT            keep the position in Redis too, as jobs with an external offset
 *                            store do: the last step before the sink writes each partition's
 *                            next offset (and updated_at, unix ms) to a hash (RedisPositions)
 * redis-key=TEMPLATE         the hash, {topic} filled in (default flink:offsets:{topic})
 * redis-every-ms=MS          write-back period (default 1000)
 * topic2=T                   a second KafkaSource, reading T, unioned with the first before the
 *                            map; group2=G, bootstrap2=HOST:PORT and source2=NAME (default
 *                            NAME-source2) set its group, Kafka cluster and operator name
 * connector=source|legacy    KafkaSource (default), or the legacy FlinkKafkaConsumer (Flink
 *                            1.20 line only; without checkpointing the Kafka client commits
 *                            on its own timer, enable.auto.commit)
 * </pre>
 *
 * <h2>Output</h2>
 *
 * <p>On stdout, one line each, in this order: {@code rest=http://127.0.0.1:PORT} once the REST
 * endpoint is up, then {@code job name=NAME jid=JOBID} for each submitted job, then
 * {@code ready}. Logs go to stderr. SIGTERM or SIGINT closes the cluster and exits with 0.
 *
 * <p>After {@code ready}, stdin takes {@code submit SPEC} lines: each submits one more job to
 * the running cluster and answers {@code job name=NAME jid=JOBID} (or {@code error name=NAME
 * MESSAGE}) on stdout.
 */
public final class KafkaLagJob {

    private KafkaLagJob() {}

    /** One parsed {@code --job} spec. */
    static final class JobSpec {
        final Map<String, String> values = new LinkedHashMap<>();
        final List<String> topics = new ArrayList<>();

        static JobSpec parse(String text) {
            JobSpec spec = new JobSpec();
            for (String part : text.split(",")) {
                if (part.isEmpty()) {
                    continue;
                }
                int eq = part.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("job spec item without key=value: " + part);
                }
                String key = part.substring(0, eq);
                String value = part.substring(eq + 1);
                if (key.equals("topic")) {
                    spec.topics.add(value);
                } else {
                    spec.values.put(key, value);
                }
            }
            if (!spec.values.containsKey("name") || spec.topics.isEmpty()) {
                throw new IllegalArgumentException("job spec needs name= and topic=: " + text);
            }
            return spec;
        }

        /**
         * The job's second KafkaSource (topic2=...): its own topic, and group2, bootstrap2 and
         * source2 where given; start, commit and kafka.* as the first.
         */
        JobSpec secondSource() {
            JobSpec second = new JobSpec();
            for (Map.Entry<String, String> entry : values.entrySet()) {
                String key = entry.getKey();
                if (key.equals("start") || key.equals("commit") || key.startsWith("kafka.")) {
                    second.values.put(key, entry.getValue());
                }
            }
            second.values.put("name", name());
            second.values.put("group", get("group2", ""));
            if (values.containsKey("bootstrap2")) {
                second.values.put("bootstrap", values.get("bootstrap2"));
            }
            if (values.containsKey("source2")) {
                second.values.put("source", values.get("source2"));
            } else {
                second.values.put("source", name() + "-source2");
            }
            second.topics.add(values.get("topic2"));
            return second;
        }

        String get(String key, String fallback) {
            String value = values.get(key);
            return value == null ? fallback : value;
        }

        String name() {
            return values.get("name");
        }

        int parallelism() {
            return Integer.parseInt(get("parallelism", "1"));
        }
    }

    /**
     * The map of the job: optional per-record delay, optional failing checkpoints. With a
     * fail-checkpoints-file it keeps one meaningless operator-state element whose serializer
     * throws while that file exists (see FailSwitchSerializer); otherwise it keeps no state.
     */
    static final class DelayMap implements MapFunction<String, String>, CheckpointedFunction {
        private static final long serialVersionUID = 1L;

        private final long delayMicros;
        private final String delayFile;
        private final String failCheckpointsFile;
        private final String failRecordsFile;
        private final String failOnceFile;
        private transient long nextFailFileCheckNanos;
        private transient boolean failing;
        private transient long effectiveDelayMicros;
        private transient long nextDelayFileCheckNanos;
        private transient boolean initialized;
        private transient ListState<Integer> failSwitch;

        DelayMap(long delayMicros, String delayFile, String failCheckpointsFile,
                String failRecordsFile, String failOnceFile) {
            this.delayMicros = delayMicros;
            this.delayFile = delayFile;
            this.failCheckpointsFile = failCheckpointsFile;
            this.failRecordsFile = failRecordsFile;
            this.failOnceFile = failOnceFile;
        }

        @Override
        public String map(String value) throws IOException {
            if (failOnceFile != null && Files.deleteIfExists(Paths.get(failOnceFile))) {
                throw new IllegalStateException("failing once on purpose: " + failOnceFile);
            }
            if (failRecordsFile != null) {
                long now = System.nanoTime();
                if (now - nextFailFileCheckNanos >= 0) {
                    nextFailFileCheckNanos = now + TimeUnit.MILLISECONDS.toNanos(200);
                    failing = Files.exists(Paths.get(failRecordsFile));
                }
                if (failing) {
                    throw new IllegalStateException("failing on purpose: " + failRecordsFile + " exists");
                }
            }
            long delay = currentDelayMicros();
            if (delay > 0) {
                long deadline = System.nanoTime() + delay * 1000L;
                long remaining;
                while ((remaining = deadline - System.nanoTime()) > 0) {
                    LockSupport.parkNanos(remaining);
                }
            }
            return value;
        }

        private long currentDelayMicros() {
            if (!initialized) {
                effectiveDelayMicros = delayMicros;
                initialized = true;
            }
            if (delayFile == null) {
                return effectiveDelayMicros;
            }
            long now = System.nanoTime();
            if (now - nextDelayFileCheckNanos >= 0) {
                nextDelayFileCheckNanos = now + TimeUnit.MILLISECONDS.toNanos(500);
                effectiveDelayMicros = delayMicros;
                try {
                    String text = Files.readString(Paths.get(delayFile), StandardCharsets.UTF_8).trim();
                    if (!text.isEmpty()) {
                        effectiveDelayMicros = Long.parseLong(text);
                    }
                } catch (IOException | NumberFormatException e) {
                    // Absent or unreadable: the configured delay applies.
                }
            }
            return effectiveDelayMicros;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            if (failSwitch != null) {
                failSwitch.update(List.of(1));
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            if (failCheckpointsFile != null) {
                failSwitch = context.getOperatorStateStore().getListState(new ListStateDescriptor<>(
                        "fail-switch", new FailSwitchSerializer(failCheckpointsFile)));
            }
        }
    }

    static Map<String, String> parseOptions(
            String[] args, List<JobSpec> jobs, Map<String, String> extraConf) {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --option VALUE, got: " + arg);
            }
            String value = args[++i];
            if (arg.equals("--job")) {
                jobs.add(JobSpec.parse(value));
            } else if (arg.equals("--conf")) {
                int eq = value.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("--conf needs KEY=VALUE, got: " + value);
                }
                extraConf.put(value.substring(0, eq), value.substring(eq + 1));
            } else {
                options.put(arg.substring(2), value);
            }
        }
        for (String key : options.keySet()) {
            if (!List.of("rest-port", "bootstrap", "savepoint-dir", "checkpoint-dir", "slots")
                    .contains(key)) {
                throw new IllegalArgumentException("unknown option --" + key);
            }
        }
        if (jobs.isEmpty()) {
            throw new IllegalArgumentException("at least one --job is required");
        }
        return options;
    }

    static Configuration clusterConfiguration(
            Map<String, String> options, Map<String, String> extraConf, int slots) {
        Map<String, String> conf = new HashMap<>();
        conf.put("rest.address", "127.0.0.1");
        conf.put("rest.bind-address", "127.0.0.1");
        conf.put("rest.bind-port", options.getOrDefault("rest-port", "0"));
        // The REST metric store (metrics.fetcher.update-interval, 10 s) and the checkpoint
        // statistics cache (3 s) keep Flink's defaults: lagsight must be right with what users
        // run, and a faster fetcher hid that its Flink-side lag was inflated by stale positions.
        conf.put("taskmanager.numberOfTaskSlots", Integer.toString(slots));
        conf.put("jobmanager.bind-host", "127.0.0.1");
        conf.put("taskmanager.bind-host", "127.0.0.1");
        conf.put("taskmanager.host", "127.0.0.1");
        // Small network buffers: a slow map then backpressures the source after a few thousand
        // small records instead of tens of thousands, so backlog shows up in Kafka and in
        // pendingRecords, and checkpoint barriers do not queue behind huge in-flight data.
        conf.put("taskmanager.memory.segment-size", "4kb");
        conf.put("taskmanager.network.memory.buffers-per-channel", "2");
        conf.put("taskmanager.network.memory.floating-buffers-per-gate", "2");
        if (options.containsKey("savepoint-dir")) {
            conf.put("state.savepoints.dir", Paths.get(options.get("savepoint-dir")).toUri().toString());
        }
        if (options.containsKey("checkpoint-dir")) {
            conf.put("state.checkpoints.dir", Paths.get(options.get("checkpoint-dir")).toUri().toString());
            conf.put("state.checkpoint-storage", "filesystem");
        }
        conf.putAll(extraConf);
        return Configuration.fromMap(conf);
    }

    /** The job's bootstrap.servers: its own list ('|' between addresses), else the default. */
    static String bootstrapOf(JobSpec spec, String defaultBootstrap) {
        String bootstrap = spec.get("bootstrap", defaultBootstrap);
        return bootstrap == null ? null : bootstrap.replace('|', ',');
    }

    static KafkaSource<String> kafkaSource(JobSpec spec, String defaultBootstrap) {
        String bootstrap = bootstrapOf(spec, defaultBootstrap);
        if (bootstrap == null) {
            throw new IllegalArgumentException("job " + spec.name() + ": no bootstrap servers");
        }
        KafkaSourceBuilder<String> builder = KafkaSource.<String>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(spec.topics)
                .setClientIdPrefix(spec.get("source", spec.name() + "-source"));
        if (spec.values.containsKey("redis")) {
            builder.setDeserializer(new RedisPositions.WithPosition());
        } else {
            builder.setValueOnlyDeserializer(new SimpleStringSchema());
        }
        String group = spec.get("group", "");
        if (!group.isEmpty()) {
            builder.setGroupId(group);
            builder.setProperty("commit.offsets.on.checkpoint", spec.get("commit", "true"));
        } else if (spec.get("commit", "true").equals("false")) {
            builder.setProperty("commit.offsets.on.checkpoint", "false");
        }
        // Without a group and without commit=false the connector decides, as for a user who
        // sets no group.id: it turns committing off (setting it on explicitly is an error).
        for (Map.Entry<String, String> entry : spec.values.entrySet()) {
            if (entry.getKey().startsWith("kafka.")) {
                builder.setProperty(entry.getKey().substring("kafka.".length()), entry.getValue());
            }
        }
        if (spec.values.containsKey("discovery-ms")) {
            builder.setProperty("partition.discovery.interval.ms", spec.get("discovery-ms", ""));
        }
        String start = spec.get("start", "committed");
        switch (start) {
            case "committed":
                builder.setStartingOffsets(
                        OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST));
                break;
            case "earliest":
                builder.setStartingOffsets(OffsetsInitializer.earliest());
                break;
            case "latest":
                builder.setStartingOffsets(OffsetsInitializer.latest());
                break;
            default:
                throw new IllegalArgumentException("job " + spec.name() + ": bad start=" + start);
        }
        return builder.build();
    }

    /**
     * The legacy FlinkKafkaConsumer (connector=legacy), from src/legacy: compiled for the 1.20
     * line only, so it is looked up by name and this class still compiles against 2.x.
     */
    @SuppressWarnings("unchecked")
    static DataStreamSource<String> legacySource(StreamExecutionEnvironment env, JobSpec spec,
            String defaultBootstrap, WatermarkStrategy<String> watermarks, String sourceName)
            throws Exception {
        String bootstrap = bootstrapOf(spec, defaultBootstrap);
        if (bootstrap == null) {
            throw new IllegalArgumentException("job " + spec.name() + ": no bootstrap servers");
        }
        Class<?> legacy;
        try {
            legacy = Class.forName("dev.lagsight.harness.LegacyKafkaSource");
        } catch (ClassNotFoundException e) {
            throw new IllegalArgumentException("job " + spec.name()
                    + ": connector=legacy needs the Flink 1.20 line (FlinkKafkaConsumer)", e);
        }
        return (DataStreamSource<String>) legacy
                .getMethod("add", StreamExecutionEnvironment.class, Map.class, List.class,
                        String.class, WatermarkStrategy.class, String.class)
                .invoke(null, env, spec.values, spec.topics, bootstrap, watermarks, sourceName);
    }

    static JobClient submit(JobSpec spec, URI rest, Map<String, String> options) throws Exception {
        Map<String, String> conf = new HashMap<>();
        long interval = Long.parseLong(spec.get("checkpoint", "1000"));
        String failFile = spec.values.get("fail-checkpoints-file");
        if (interval > 0) {
            conf.put("execution.checkpointing.interval", interval + " ms");
            String tolerable = spec.get("tolerable-failures",
                    failFile != null ? Integer.toString(Integer.MAX_VALUE) : null);
            if (tolerable != null) {
                conf.put("execution.checkpointing.tolerable-failed-checkpoints", tolerable);
            }
            if (spec.values.containsKey("min-pause")) {
                conf.put("execution.checkpointing.min-pause", spec.get("min-pause", "0") + " ms");
            }
        }
        if (spec.values.containsKey("restore")) {
            conf.put("execution.state-recovery.path", spec.get("restore", ""));
            conf.put("execution.state-recovery.ignore-unclaimed-state",
                    spec.get("allow-non-restored", "false"));
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createRemoteEnvironment(
                rest.getHost(), rest.getPort(), Configuration.fromMap(conf));
        env.setParallelism(spec.parallelism());

        String sourceName = spec.get("source", spec.name() + "-source");
        String mapName = spec.get("map", spec.name() + "-map");
        WatermarkStrategy<String> watermarks = spec.get("watermarks", "monotonous").equals("none")
                ? WatermarkStrategy.noWatermarks()
                : WatermarkStrategy.forMonotonousTimestamps();
        DataStreamSource<String> source;
        String connector = spec.get("connector", "source");
        if (connector.equals("legacy")) {
            if (spec.values.containsKey("redis")) {
                throw new IllegalArgumentException(
                        "job " + spec.name() + ": redis= needs the KafkaSource (connector=source)");
            }
            source = legacySource(env, spec, options.get("bootstrap"), watermarks, sourceName);
        } else if (connector.equals("source")) {
            source = env.fromSource(
                    kafkaSource(spec, options.get("bootstrap")), watermarks, sourceName);
        } else {
            throw new IllegalArgumentException("job " + spec.name() + ": bad connector=" + connector);
        }
        DataStream<String> records = source.uid(sourceName);
        if (spec.values.containsKey("topic2")) {
            JobSpec second = spec.secondSource();
            String secondName = second.get("source", spec.name() + "-source2");
            records = records.union(env.fromSource(kafkaSource(second, options.get("bootstrap")),
                    watermarks, secondName).uid(secondName));
        }
        var mapped = records
                .map(new DelayMap(Long.parseLong(spec.get("delay-us", "0")),
                        spec.values.get("delay-file"), failFile,
                        spec.values.get("fail-records-file"),
                        spec.values.get("fail-once-file")))
                .name(mapName)
                .uid(mapName);
        if (!Boolean.parseBoolean(spec.get("chain", "false"))) {
            mapped.startNewChain();
        }
        if (spec.values.containsKey("then-delay-us")) {
            String thenName = spec.get("then", spec.name() + "-enrich");
            mapped = mapped
                    .map(new DelayMap(Long.parseLong(spec.get("then-delay-us", "0")),
                            null, null, null, null))
                    .name(thenName)
                    .uid(thenName)
                    .startNewChain();
        }
        if (spec.values.containsKey("redis")) {
            String writerName = spec.name() + "-positions";
            mapped = mapped
                    .map(new RedisPositions.Writer(spec.get("redis", ""),
                            spec.get("redis-key", "flink:offsets:{topic}"),
                            Long.parseLong(spec.get("redis-every-ms", "1000"))))
                    .name(writerName)
                    .uid(writerName);
        }
        String sinkName = spec.get("sink", spec.name() + "-sink");
        mapped.sinkTo(new DiscardingSink<>()).name(sinkName).uid(sinkName);
        return env.executeAsync(spec.name());
    }

    /**
     * Reads commands from stdin while the cluster runs, so a test can add jobs to the running
     * session (e.g. restore a job from an older savepoint after cancelling it): {@code submit
     * SPEC} answers {@code job name=NAME jid=JOBID} or {@code error name=NAME MESSAGE}. End of
     * stdin is not a stop signal (a parent that never writes may close it).
     */
    static void startCommandReader(URI rest, Map<String, String> options, CountDownLatch stop) {
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while (stop.getCount() > 0 && (line = in.readLine()) != null) {
                    line = line.trim();
                    if (!line.startsWith("submit ")) {
                        if (!line.isEmpty()) {
                            System.out.println("error unknown command: " + line);
                            System.out.flush();
                        }
                        continue;
                    }
                    String specText = line.substring("submit ".length()).trim();
                    String name = "?";
                    try {
                        JobSpec spec = JobSpec.parse(specText);
                        name = spec.name();
                        JobClient client = submit(spec, rest, options);
                        System.out.println("job name=" + name + " jid=" + client.getJobID());
                    } catch (Exception e) {
                        e.printStackTrace();
                        System.out.println("error name=" + name + " "
                                + String.valueOf(e).replace('\n', ' '));
                    }
                    System.out.flush();
                }
            } catch (IOException e) {
                e.printStackTrace();
            }
        }, "command-reader");
        reader.setDaemon(true);
        reader.start();
    }

    public static void main(String[] args) throws Exception {
        List<JobSpec> jobs = new ArrayList<>();
        Map<String, String> extraConf = new LinkedHashMap<>();
        Map<String, String> options;
        try {
            options = parseOptions(args, jobs, extraConf);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.exit(2);
            return;
        }
        int slots = options.containsKey("slots")
                ? Integer.parseInt(options.get("slots"))
                : jobs.stream().mapToInt(JobSpec::parallelism).sum() + 2;

        CountDownLatch stop = new CountDownLatch(1);
        sun.misc.Signal.handle(new sun.misc.Signal("TERM"), signal -> stop.countDown());
        sun.misc.Signal.handle(new sun.misc.Signal("INT"), signal -> stop.countDown());

        MiniClusterConfiguration clusterConfig = new MiniClusterConfiguration.Builder()
                .setConfiguration(clusterConfiguration(options, extraConf, slots))
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(slots)
                .build();
        MiniCluster cluster = new MiniCluster(clusterConfig);
        int exitCode = 0;
        try {
            cluster.start();
            URI rest = cluster.getRestAddress().get(60, TimeUnit.SECONDS);
            System.out.println("rest=http://127.0.0.1:" + rest.getPort());
            System.out.flush();
            for (JobSpec spec : jobs) {
                JobClient client = submit(spec, rest, options);
                System.out.println("job name=" + spec.name() + " jid=" + client.getJobID());
                System.out.flush();
            }
            System.out.println("ready");
            System.out.flush();
            startCommandReader(rest, options, stop);
            stop.await();
        } catch (Exception e) {
            e.printStackTrace();
            exitCode = 1;
        } finally {
            try {
                cluster.closeAsync().get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                e.printStackTrace();
                exitCode = 1;
            }
        }
        System.exit(exitCode);
    }
}
