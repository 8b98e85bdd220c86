package dev.lagsight.harness;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;

import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Serializer of the map's one-element operator state: an int that means nothing. Writing it
 * throws while a given file exists. Operator state is written in the asynchronous part of a
 * checkpoint, so the failure declines that checkpoint (CHECKPOINT_ASYNC_EXCEPTION) and the task
 * keeps running; an exception from snapshotState itself would fail the task and restart the job.
 */
final class FailSwitchSerializer extends TypeSerializerSingleton<Integer> {
    private static final long serialVersionUID = 1L;

    /** When set and the file exists, {@link #serialize} throws. Null after a restore. */
    private final String failFile;

    FailSwitchSerializer(String failFile) {
        this.failFile = failFile;
    }

    @Override
    public boolean isImmutableType() {
        return true;
    }

    @Override
    public Integer createInstance() {
        return 0;
    }

    @Override
    public Integer copy(Integer from) {
        return from;
    }

    @Override
    public Integer copy(Integer from, Integer reuse) {
        return from;
    }

    @Override
    public int getLength() {
        return 4;
    }

    @Override
    public void serialize(Integer record, DataOutputView target) throws IOException {
        if (failFile != null && Files.exists(Paths.get(failFile))) {
            throw new IOException("checkpoint failed on purpose: " + failFile + " exists");
        }
        target.writeInt(record);
    }

    @Override
    public Integer deserialize(DataInputView source) throws IOException {
        return source.readInt();
    }

    @Override
    public Integer deserialize(Integer reuse, DataInputView source) throws IOException {
        return source.readInt();
    }

    @Override
    public void copy(DataInputView source, DataOutputView target) throws IOException {
        target.writeInt(source.readInt());
    }

    @Override
    public TypeSerializerSnapshot<Integer> snapshotConfiguration() {
        return new Snapshot();
    }

    /** Restores a serializer that never fails. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<Integer> {
        public Snapshot() {
            super(() -> new FailSwitchSerializer(null));
        }
    }
}
