# Functions of the reference peer VM (sourced by its init and by
# peer-cmd, the control service). tlshd runs in the foreground with -s,
# its log in /var/log/tlshd.log (appended to over restarts).
CERTS=/etc/tlsh-test-certs
TLSHD_LOG=/var/log/tlshd.log
TLSHD_MODE_FILE=/run/tlshd.mode

# tlshd_config MODE: /etc/tlshd/config for MODE: trusted (ref.test's
# certificate from the bench CA), untrusted (the same names, signed by
# the other CA) or none (no server certificate: server handshakes fail).
# Client certificates are verified against the bench CA; the client side
# (the peer mounting our server) presents client.pem.
tlshd_config() {
	local cert
	case "$1" in
	trusted) cert=ref ;;
	untrusted) cert=ref-untrusted ;;
	none) cert= ;;
	*) echo "tlshd: unknown mode $1 (trusted, untrusted, none)"; return 64 ;;
	esac
	mkdir -p /etc/tlshd
	{
		echo "[debug]"
		echo "loglevel=${TLSHD_LOGLEVEL:-1}"
		echo "tls=${TLSHD_TLS_DEBUG:-0}"
		echo "nl=0"
		echo "[authenticate.client]"
		echo "x509.truststore=$CERTS/ca.pem"
		echo "x509.certificate=$CERTS/client.pem"
		echo "x509.private_key=$CERTS/client-key.pem"
		echo "[authenticate.server]"
		echo "x509.truststore=$CERTS/ca.pem"
		if [ -n "$cert" ]; then
			echo "x509.certificate=$CERTS/$cert.pem"
			echo "x509.private_key=$CERTS/$cert-key.pem"
		fi
	} > /etc/tlshd/config
}

tlshd_pid() {
	pgrep -x tlshd
}

# tlshd_stop: no tlshd (knfsd then answers STARTTLS and cannot handshake)
tlshd_stop() {
	local i
	pkill -x tlshd
	for i in $(seq 50); do
		tlshd_pid > /dev/null || break
		sleep 0.1
	done
	tlshd_pid > /dev/null && pkill -9 -x tlshd
	echo stopped > $TLSHD_MODE_FILE
	! tlshd_pid > /dev/null
}

# tlshd_start MODE: (re)start tlshd with the configuration of MODE; ready
# once it has joined the handshake family's multicast group (it logs the
# kernel's capabilities right after that), 10 s at most
tlshd_start() {
	local from i
	tlshd_config "$1" || return
	tlshd_pid > /dev/null && tlshd_stop
	echo "=== tlshd start $1 $(date +%T)" >> $TLSHD_LOG
	from=$(wc -l < $TLSHD_LOG)
	setsid /usr/sbin/tlshd -s -c /etc/tlshd/config </dev/null >> $TLSHD_LOG 2>&1 &
	for i in $(seq 100); do
		tail -n +"$from" $TLSHD_LOG | grep -q "Kernel capabilities" && break
		tlshd_pid > /dev/null || break
		sleep 0.1
	done
	if ! tlshd_pid > /dev/null || ! tail -n +"$from" $TLSHD_LOG | grep -q "Kernel capabilities"; then
		echo "tlshd did not come up:"
		tail -n +"$from" $TLSHD_LOG | tail -5
		return 1
	fi
	echo "$1" > $TLSHD_MODE_FILE
}

# tlshd_mode: trusted, untrusted, none or stopped
tlshd_mode() {
	if tlshd_pid > /dev/null; then cat $TLSHD_MODE_FILE; else echo stopped; fi
}
