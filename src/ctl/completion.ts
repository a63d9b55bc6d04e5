import { ALIASES, COMMANDS, FORMATS, GLOBAL_OPTIONS } from './args';

const flag = (name: string) => `--${name}`;

/** The words to complete after each command: its flags and the fixed words it takes. */
function commandWords(command: string): string[] {
  const spec = COMMANDS[command];
  return [...(spec.choices ?? []), ...[...spec.options, ...GLOBAL_OPTIONS].map(flag)];
}

/** `statorctl completion bash`: commands, flags per command, formats; member names from `statorctl list --format json`. */
export function bashCompletion(): string {
  const commands = [...Object.keys(COMMANDS), ...Object.keys(ALIASES)].join(' ');
  const cases = Object.keys(COMMANDS)
    .map(
      (command) =>
        `    ${command}${Object.entries(ALIASES)
          .filter(([, to]) => to === command)
          .map(([alias]) => `|${alias}`)
          .join('')}) words="${commandWords(command).join(' ')}" ;;`,
    )
    .join('\n');
  return `# statorctl bash completion: source <(statorctl completion bash)
_statorctl() {
  local cur prev command words i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  case "$prev" in
    --format) COMPREPLY=( $(compgen -W "${FORMATS.join(' ')}" -- "$cur") ); return ;;
    -c|--config|--cacert|--cert|--key) COMPREPLY=( $(compgen -f -- "$cur") ); return ;;
    --candidate|--leader|--primary|--node)
      COMPREPLY=( $(compgen -W "$(_statorctl_members)" -- "$cur") ); return ;;
  esac
  command=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      --api|-c|--config|--format|--auth|--cacert|--cert|--key|--timeout) ((i++)) ;;
      -*) ;;
      *) command="\${COMP_WORDS[i]}"; break ;;
    esac
  done
  if [ -z "$command" ]; then
    COMPREPLY=( $(compgen -W "${commands} ${GLOBAL_OPTIONS.map(flag).join(' ')}" -- "$cur") ); return
  fi
  case "$command" in
${cases}
    *) words="" ;;
  esac
  case "$command" in
    restart|reload|reinit|flush) words="$words $(_statorctl_members)" ;;
  esac
  COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}
# Member names of the cluster the command line points at (STATORCTL_API or STATORCTL_CONFIG when no flag).
_statorctl_members() {
  statorctl list --format json 2>/dev/null | sed -n 's/^ *"Member": "\\(.*\\)",$/\\1/p'
}
complete -F _statorctl statorctl
`;
}

/** `statorctl completion zsh`: the bash function through zsh's bashcompinit. */
export function zshCompletion(): string {
  return `# statorctl zsh completion: source <(statorctl completion zsh)
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bashCompletion()}`;
}
