#!/bin/bash
# The service of this example: a real nginx (Debian's), in a folder of its own, on loopback.
#
#   ./server.sh start WORKERS [PORT]   (re)start it with WORKERS worker processes on 127.0.0.1:PORT
#                                      (default 18080), and wait until it answers
#   ./server.sh stop                   stop it (by its pid file) and start a fresh access log
#
# SERVICE_DIR (default: ./nginx beside this script) holds its config, logs and pid file.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${SERVICE_DIR:-$here/nginx}
nginx=${NGINX:-/usr/sbin/nginx}
mkdir -p "$dir"

stop() {
    if [ -f "$dir/nginx.pid" ]; then
        pid=$(cat "$dir/nginx.pid")
        kill "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null; do
            i=$((i + 1))
            [ "$i" -gt 500 ] && { echo "nginx $pid did not stop" >&2; exit 1; }
            sleep 0.01
        done
        rm -f "$dir/nginx.pid"
    fi
    : > "$dir/access.log"
}

start() {
    workers=$1
    port=${2:-18080}
    stop
    cat > "$dir/nginx.conf" <<CONF
daemon on;
pid $dir/nginx.pid;
error_log $dir/error.log;
worker_processes $workers;
events { worker_connections 1024; }
http {
    access_log $dir/access.log;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    server {
        listen 127.0.0.1:$port;
        location / { return 200 "hello from nginx\n"; }
    }
}
CONF
    "$nginx" -c "$dir/nginx.conf" -e "$dir/error.log"
    i=0
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -gt 500 ] && { echo "nginx does not answer on 127.0.0.1:$port" >&2; exit 1; }
        sleep 0.01
    done
    echo "nginx with $workers worker process(es) on 127.0.0.1:$port"
}

case "${1:-}" in
    start) start "${2:?start needs the number of worker processes}" "${3:-18080}" ;;
    stop) stop ;;
    *) echo "usage: $0 start WORKERS [PORT] | stop" >&2; exit 2 ;;
esac
