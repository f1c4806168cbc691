package org.apache.clojure_mxnet.context;

/**
 * A device arrays live on ({@code cpu(0)}, {@code gpu(1)}): a value, equal to
 * another with the same device type and id.
 *
 * <p>A JVM class compiled with the bridge (not a Clojure {@code deftype}), so
 * that reloading {@code org.apache.clojure-mxnet.context} leaves existing
 * contexts equal to new ones and accepted by every spec.
 */
public final class Context {
    /** {@code "cpu"} or {@code "gpu"}. */
    public final String deviceType;
    /** The device's number. */
    public final long deviceId;

    public Context(String deviceType, long deviceId) {
        this.deviceType = deviceType;
        this.deviceId = deviceId;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Context && deviceType.equals(((Context) o).deviceType)
                && deviceId == ((Context) o).deviceId;
    }

    @Override
    public int hashCode() {
        return 31 * deviceType.hashCode() + Long.hashCode(deviceId);
    }

    @Override
    public String toString() {
        return deviceType + "(" + deviceId + ")";
    }
}
