#!/usr/bin/env bash
# Installs (Maven Central jars, cached outside the repo) and runs a single-node KRaft Kafka broker
# on loopback. Usage: kafka.sh install|start|stop|status. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
libs="$OPSLORE_CACHE_DIR/kafka-$KAFKA_VERSION/libs"
dir="$OPSLORE_STATE_DIR/kafka"
pidfile="$dir/kafka.pid"

install() {
  if [ -f "$libs/.complete" ]; then return 0; fi
  command -v java >/dev/null || { log "java is missing (apt-get install openjdk-17-jre-headless)"; exit 1; }
  command -v mvn >/dev/null || { log "mvn is missing (apt-get install maven)"; exit 1; }
  log "resolving Kafka $KAFKA_VERSION jars into $libs"
  mkdir -p "$libs"
  mvn -q -B -f "$here/kafka/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$libs"
  touch "$libs/.complete"
}

write_config() {
  mkdir -p "$dir/data" "$dir/logs"
  cat > "$dir/server.properties" <<CONF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=$OPSLORE_TOPIC_PARTITIONS
offsets.topic.replication.factor=1
offsets.topic.num.partitions=6
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=6
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
log.retention.hours=-1
CONF
  cat > "$dir/log4j2.properties" <<CONF
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = $dir/logs/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
CONF
}

java_run() {
  java -Xms256m -Xmx768m -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$libs/*" "$@"
}

broker_ready() { (exec 3<>"/dev/tcp/127.0.0.1/$KAFKA_PORT") 2>/dev/null; }

start() {
  install
  if pid_alive "$pidfile"; then log "kafka already running (pid $(cat "$pidfile"))"; return 0; fi
  write_config
  if [ ! -f "$dir/data/meta.properties" ]; then
    log "formatting KRaft storage"
    java_run kafka.tools.StorageTool format --standalone -t "$(java_run kafka.tools.StorageTool random-uuid)" \
      -c "$dir/server.properties" >"$dir/logs/format.log" 2>&1
  fi
  log "starting kafka on 127.0.0.1:$KAFKA_PORT"
  nohup java -Xms256m -Xmx768m -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$libs/*" \
    kafka.Kafka "$dir/server.properties" >"$dir/logs/stdout.log" 2>&1 &
  echo $! > "$pidfile"
  WAIT_SECONDS=90 wait_for broker_ready || { log "kafka did not start; see $dir/logs"; tail -n 30 "$dir/logs/stdout.log" >&2; exit 1; }
}

case "${1:-start}" in
  install) install ;;
  start) start ;;
  stop) stop_pidfile "$pidfile" kafka ;;
  status) pid_alive "$pidfile" && broker_ready ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
