package main

import (
	"net"
	"os"
)

// notifySystemd tells the service manager how serve stands (systemd's
// sd_notify protocol: "READY=1" once it listens, "STOPPING=1" when it shuts
// down), so that a Type=notify unit counts as started only when clients can
// connect: `systemctl start ingot` returns then, and units ordered after it
// start then. It sends a datagram to $NOTIFY_SOCKET, which systemd sets for
// such a unit; without it, it does nothing.
func notifySystemd(state string) error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	if path[0] == '@' { // an abstract socket
		path = "\x00" + path[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(state))
	return err
}
