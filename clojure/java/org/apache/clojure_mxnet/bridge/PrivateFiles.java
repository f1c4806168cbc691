package org.apache.clojure_mxnet.bridge;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * Files the engine made for this user only: its shared-memory files and the
 * attach files of a serving program. Before this JVM opens one it checks
 * that the path is not a symbolic link, is a regular file, belongs to this
 * JVM's user and that no other user may read or write it (mode 0600 or
 * stricter), and opens it without following links; anything else is
 * refused with an {@link UnsafeFileException} saying what was found. The
 * engine creates them the same way (python/mxkv/bridge/private.py).
 */
public final class PrivateFiles {
    private PrivateFiles() {
    }

    /** A file that is not what the engine would have made: refused. */
    public static final class UnsafeFileException extends IllegalStateException {
        private final String path;

        UnsafeFileException(Path path, String problem) {
            super("refusing " + path + ": " + problem);
            this.path = path.toString();
        }

        public String path() {
            return path;
        }
    }

    private static final Set<PosixFilePermission> OTHERS = EnumSet.of(
            PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
            PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.OTHERS_READ,
            PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);

    private static final LinkOption[] NOFOLLOW = {LinkOption.NOFOLLOW_LINKS};

    /** This JVM's user id (the owner of /proc/self), or -1 where unknown. */
    private static final int UID = ownUid();

    private static int ownUid() {
        try {
            return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException
                 | ClassCastException e) {
            return -1;
        }
    }

    private static Object owner(Path p) throws IOException {
        if (UID >= 0) {
            return Files.getAttribute(p, "unix:uid", NOFOLLOW);
        }
        return Files.getOwner(p, NOFOLLOW).getName();
    }

    private static Object self() {
        return UID >= 0 ? (Object) UID : System.getProperty("user.name");
    }

    /**
     * The attributes of {@code p} once checked: a regular file (not a link)
     * of this user that no one else may read or write.
     */
    public static PosixFileAttributes check(Path p) {
        PosixFileAttributes a;
        Object owner;
        try {
            a = Files.readAttributes(p, PosixFileAttributes.class, NOFOLLOW);
            owner = owner(p);
        } catch (IOException e) {
            throw new UnsafeFileException(p, "cannot read its attributes (" + e + ")");
        }
        if (a.isSymbolicLink()) {
            throw new UnsafeFileException(p, "it is a symbolic link");
        }
        if (!a.isRegularFile()) {
            throw new UnsafeFileException(p, "it is not a regular file");
        }
        if (!Objects.equals(owner, self())) {
            throw new UnsafeFileException(p, "it belongs to another user (" + owner + ")");
        }
        Set<PosixFilePermission> perms = a.permissions();
        perms.retainAll(OTHERS);
        if (!perms.isEmpty()) {
            throw new UnsafeFileException(p, "other users may access it (" + perms
                    + "); mxkv makes these files with mode 0600");
        }
        return a;
    }

    /**
     * Opens {@code p} read-write once {@link #check checked}, without
     * following a link, and makes sure the file opened is the file checked.
     */
    public static FileChannel open(Path p) throws IOException {
        return open(p, true);
    }

    /** The contents of {@code p} as UTF-8 text, once {@link #check checked}. */
    public static String read(Path p) throws IOException {
        try (FileChannel ch = open(p, false)) {
            long n = ch.size();
            if (n > (1 << 20)) {
                throw new UnsafeFileException(p, "it holds " + n + " bytes, more than expected");
            }
            ByteBuffer b = ByteBuffer.allocate((int) n);
            while (b.hasRemaining() && ch.read(b) >= 0) {
                // until full or at the end
            }
            return new String(b.array(), 0, b.position(), StandardCharsets.UTF_8);
        }
    }

    private static FileChannel open(Path p, boolean write) throws IOException {
        Object before = check(p).fileKey();
        FileChannel ch = write
                ? FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE,
                        LinkOption.NOFOLLOW_LINKS)
                : FileChannel.open(p, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
        try {
            Object after = check(p).fileKey();
            if (before != null && !before.equals(after)) {
                throw new UnsafeFileException(p, "it was replaced while being opened");
            }
        } catch (RuntimeException e) {
            ch.close();
            throw e;
        }
        return ch;
    }
}
