# Sourced by scripts/test and bench/run: a run must change no file git
# tracks and add none it would pick up (results go to ignored
# directories). worktree_snapshot [PATHSPEC...] before the run and
# worktree_unchanged NAME after it; the latter fails, listing what changed,
# when the work tree (limited to PATHSPEC, default all of it, e.g.
# ':(exclude)conformance/RESULTS.md' when that was asked for) differs.
# Outside a git work tree both do nothing.

worktree_state() {
  git status --porcelain=v1 --untracked-files=all -- "${worktree_paths[@]}"
  git diff --no-ext-diff HEAD -- "${worktree_paths[@]}" | sha256sum
}

worktree_snapshot() {
  worktree_before="" worktree_paths=("${@:-.}")
  git rev-parse --is-inside-work-tree >/dev/null 2>&1 || return 0
  worktree_before=$(worktree_state)
}

worktree_unchanged() {
  git rev-parse --is-inside-work-tree >/dev/null 2>&1 || return 0
  local now
  now=$(worktree_state)
  if [[ $now != "$worktree_before" ]]; then
    echo "$1: the run changed the work tree (results belong in an ignored directory):" >&2
    diff <(echo "$worktree_before") <(echo "$now") >&2 || true
    return 1
  fi
}
