#!/bin/sh
# A plugin in POSIX sh that leaves a child behind (docs/src/plugins-at-run-time.md): at each
# start it puts `sleep 1000` in the background and notes "started <its pid> <the sleep's
# pid>" in the file its first argument names; a `shutdown` it hears is noted there too.
# Its tool <hang> is never answered.
log=$1
sleep 1000 &
echo "started $$ $!" >> "$log"
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/^.*"id":\([0-9][0-9]*\).*$/\1/p')
  case $line in
    *'"method":"initialize"'*)
      tool='{"name":"hang","doc":"## <hang>[text]</hang> - Never answer"}'
      printf '{"jsonrpc":"2.0","id":%s,"result":{"name":"tree","version":"1","tools":[%s]}}\n' \
        "$id" "$tool" ;;
    *'"method":"shutdown"'*)
      echo "shutdown" >> "$log" ;;
  esac
done
