#!/usr/bin/env bash
# Install RAG Hub's systemd units, system-wide (default) or per user (--user). Idempotent.
set -euo pipefail

usage() {
	cat <<'EOF'
Usage: scripts/install-systemd.sh [options]

Renders the templates in systemd/ (rag-hub.service, rag-indexer.service, rag-integrity.service,
rag-integrity.timer, rag-backup.service, rag-backup.timer) and installs them. System mode (the
default; run as root) also creates the rag-hub system user and group, the data dir, and an
example /etc/rag-hub/rag-hub.env (only if it does not exist yet), then enables and starts
rag-hub.service, rag-integrity.timer and rag-backup.timer.
Running it again changes nothing and says so.

Options:
  --prefix DIR     install dir holding .venv/bin/rag-hub (default: the checkout this script
                   is in)
  --data-dir DIR   data dir, the only path the services may write (default: /var/lib/rag-hub;
                   with --user: ~/.local/share/rag-hub)
  --config FILE    collections.yaml (default: PREFIX/collections.yaml)
  --user           per-user units in ~/.config/systemd/user, run as you: no dedicated account,
                   env file ~/.config/rag-hub/rag-hub.env
  --dest DIR       only write the unit files, into DIR (default: /etc/systemd/system, or the
                   user unit dir); no account, data dir, env file or systemctl
  --no-enable      do not call systemctl
  --dry-run        print what would be written and run; change nothing
  -h, --help       show this help
EOF
}

die() {
	echo "install-systemd: error: $*" >&2
	exit 1
}

repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
units=(rag-hub.service rag-indexer.service rag-integrity.service rag-integrity.timer
	rag-backup.service rag-backup.timer)
run_user=rag-hub
run_group=rag-hub

prefix=$repo data_dir="" config="" dest="" user_mode=false enable=true dry_run=false
while (($#)); do
	case $1 in
	--prefix | --data-dir | --config | --dest)
		(($# >= 2)) || die "$1 needs an argument"
		case $1 in
		--prefix) prefix=$2 ;;
		--data-dir) data_dir=$2 ;;
		--config) config=$2 ;;
		--dest) dest=$2 ;;
		esac
		shift 2
		;;
	--user) user_mode=true && shift ;;
	--no-enable) enable=false && shift ;;
	--dry-run) dry_run=true && shift ;;
	-h | --help) usage && exit 0 ;;
	*) die "unknown option: $1 (see --help)" ;;
	esac
done

if $user_mode; then
	: "${HOME:?HOME is not set}"
	config_home=${XDG_CONFIG_HOME:-$HOME/.config}
	data_dir=${data_dir:-${XDG_DATA_HOME:-$HOME/.local/share}/rag-hub}
	env_file=$config_home/rag-hub/rag-hub.env
	unit_dir=$config_home/systemd/user
	systemctl=(systemctl --user)
else
	data_dir=${data_dir:-/var/lib/rag-hub}
	env_file=/etc/rag-hub/rag-hub.env
	unit_dir=/etc/systemd/system
	systemctl=(systemctl)
fi
units_only=false
if [[ -n $dest ]]; then
	units_only=true
	unit_dir=$dest
fi
prefix=$(realpath -m -- "$prefix")
data_dir=$(realpath -m -- "$data_dir")
config=$(realpath -m -- "${config:-$prefix/collections.yaml}")
unit_dir=$(realpath -m -- "$unit_dir")
for path in "$prefix" "$data_dir" "$config" "$env_file"; do
	# Keeps sed and systemd's specifier (%) and quoting rules out of the picture.
	[[ $path =~ ^/[A-Za-z0-9._/+,:-]*$ ]] || die "unsupported characters in path: $path"
done
if ! $user_mode && ! $units_only && ! $dry_run && ((EUID != 0)); then
	die "a system install needs root (sudo $0 ...); or use --user, --dest or --dry-run"
fi

# ProtectHome=true hides /home, /root and /run/user: use read-only when we live there.
protect_home=true
if $user_mode; then
	protect_home=read-only
else
	for path in "$prefix" "$data_dir" "$config"; do
		case $path/ in /home/* | /root/* | /run/user/*) protect_home=read-only ;; esac
	done
	[[ $protect_home == true ]] ||
		echo "note: paths under /home or /root: the units use ProtectHome=read-only," \
			"and $run_user needs read access there"
fi

work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT
changes=0

render() { # TEMPLATE -> stdout
	sed -e "s|@PREFIX@|$prefix|g" -e "s|@DATA_DIR@|$data_dir|g" -e "s|@CONFIG@|$config|g" \
		-e "s|@ENV_FILE@|$env_file|g" -e "s|@USER@|$run_user|g" -e "s|@GROUP@|$run_group|g" \
		-e "s|^ProtectHome=true\$|ProtectHome=$protect_home|" "$1" |
		if $user_mode; then
			# The user manager has no User=/Group=, no network-online.target and no
			# multi-user.target, its services hold no capabilities to drop, and its
			# sandboxing needs an explicit user namespace.
			sed -e '/^User=/d' -e '/^Group=/d' -e '/^\(Wants\|After\)=network-online\.target$/d' \
				-e '/^CapabilityBoundingSet=/d' \
				-e 's/^WantedBy=multi-user\.target$/WantedBy=default.target/' \
				-e 's/^NoNewPrivileges=true$/&\nPrivateUsers=true/' \
				-e '/^#/s/systemctl /systemctl --user /g'
		else
			cat
		fi
}

put() { # SOURCE DEST MODE: install SOURCE as DEST unless DEST already has that content
	if [[ -f $2 ]] && cmp -s -- "$1" "$2"; then
		echo "unchanged: $2"
		return
	fi
	changes=$((changes + 1))
	if $dry_run; then
		echo "would write $2:"
		sed 's/^/    /' "$1"
		return
	fi
	mkdir -p -- "$(dirname -- "$2")"
	install -m "$3" -- "$1" "$2.tmp.$$"
	mv -f -- "$2.tmp.$$" "$2"
	echo "wrote: $2"
}

run() { # COMMAND...: run it, or print it on --dry-run
	changes=$((changes + 1))
	local cmd
	printf -v cmd '%q ' "$@"
	if $dry_run; then
		echo "would run: $cmd"
	else
		echo "running: $cmd"
		"$@"
	fi
}

[[ -x $prefix/.venv/bin/rag-hub ]] ||
	echo "warning: $prefix/.venv/bin/rag-hub is missing: run 'make install' in $prefix first" >&2

# 1. Account and data dir (system mode), env file.
if ! $units_only; then
	if ! $user_mode; then
		getent group "$run_group" >/dev/null || run groupadd --system "$run_group"
		getent passwd "$run_user" >/dev/null ||
			run useradd --system --gid "$run_group" --home-dir "$data_dir" --no-create-home \
				--shell /usr/sbin/nologin --comment "RAG Hub" "$run_user"
		if [[ ! -d $data_dir ]]; then
			run install -d -m 0750 -o "$run_user" -g "$run_group" -- "$data_dir"
		elif [[ $(stat -c %U:%G -- "$data_dir") != "$run_user:$run_group" ]]; then
			run chown -- "$run_user:$run_group" "$data_dir"
			echo "note: only $data_dir itself was chowned, not its contents"
		fi
	elif [[ ! -d $data_dir ]]; then
		run mkdir -p -m 0750 -- "$data_dir"
	fi

	if [[ -e $env_file ]]; then
		echo "unchanged: $env_file (exists; never overwritten)"
	else
		cat >"$work/env" <<EOF
# RAG Hub settings for the systemd units (EnvironmentFile=): KEY=value lines, no quotes needed.
# Restart after a change: ${systemctl[*]} restart rag-hub.service
#
# The units already set RAG_CONFIG=$config and RAG_DATA_DIR=$data_dir.
# RAG_DATA_DIR must match the units' ReadWritePaths=: change it by re-running
# scripts/install-systemd.sh --data-dir DIR, not here.
#RAG_CONFIG=$config
#RAG_DATA_DIR=$data_dir
#RAG_HOST=127.0.0.1
#RAG_PORT=8000
# Server mode: a Qdrant server instead of the embedded store. Then run the API alone and
# rag-indexer.service next to it (see systemd/README.md).
#RAG_QDRANT_URL=http://127.0.0.1:6333
#RAG_QDRANT_API_KEY=
#RAG_OLLAMA_URL=http://127.0.0.1:11434
# Keys for the API and for its admin endpoints; unset means no authentication.
#RAG_API_KEY=
#RAG_ADMIN_API_KEY=
# Backups (rag-backup.timer): where, how many, and the age rag-hub check reports as too old.
#RAG_BACKUP_DIR=$data_dir/backups
#RAG_BACKUP_KEEP_DAILY=7
#RAG_BACKUP_KEEP_WEEKLY=4
#RAG_BACKUP_MAX_AGE_H=36
EOF
		if $user_mode; then
			put "$work/env" "$env_file" 0600
		else
			put "$work/env" "$env_file" 0640
			$dry_run || chgrp -- "$run_group" "$env_file"
		fi
	fi
fi

# 2. Unit files.
units_changed=$changes
for unit in "${units[@]}"; do
	render "$repo/systemd/$unit" >"$work/$unit"
	put "$work/$unit" "$unit_dir/$unit" 0644
done
units_changed=$((changes - units_changed))

# 3. systemctl.
if ! $enable; then
	echo "--no-enable: not calling systemctl"
elif $units_only; then
	echo "--dest given: not calling systemctl; the units are only written to $unit_dir"
elif ! command -v systemctl >/dev/null ||
	{ $user_mode && ! systemctl --user show-environment >/dev/null 2>&1; } ||
	{ ! $user_mode && [[ ! -d /run/systemd/system ]]; }; then
	echo "systemctl is not usable here (systemd is not running): skipping. Later, run:"
	echo "  ${systemctl[*]} daemon-reload && ${systemctl[*]} enable --now rag-hub.service rag-integrity.timer rag-backup.timer"
else
	((units_changed == 0)) || run "${systemctl[@]}" daemon-reload
	for unit in rag-hub.service rag-integrity.timer rag-backup.timer; do
		if [[ $("${systemctl[@]}" is-enabled "$unit" 2>/dev/null) == enabled ]] &&
			"${systemctl[@]}" is-active --quiet "$unit"; then
			echo "unchanged: $unit is enabled and active"
			if ((units_changed > 0)) && [[ $unit == *.service ]]; then
				echo "note: apply the new units with: ${systemctl[*]} restart $unit"
			fi
		else
			run "${systemctl[@]}" enable --now "$unit"
		fi
	done
	if $user_mode; then
		echo "note: to keep your services running while logged out: loginctl enable-linger"
	fi
fi

if ((changes == 0)); then
	echo "Nothing to do: already installed, no changes made."
elif $dry_run; then
	echo "Dry run: $changes change(s) would be made, none made."
else
	echo "Done: $changes change(s) made."
fi
