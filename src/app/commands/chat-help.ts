import { defineHelp, KEY_FLAG, URL_FLAG } from '../../cli/command-help.js';

export const CHAT_HELP = defineHelp({
  name: 'chat',
  summary: 'send one message to a running gateway and print each step',
  usage: 'kiwi chat "MESSAGE" [--url URL] [--model NAME] [--key KEY] [--json]',
  about:
    "Sends one message to a running gateway over /v1/chat/completions, streamed, and prints the agent's text as it arrives and each step the gateway took: the intent, a question asked back, the call, a call waiting for approval (kiwi approvals answers it), the result, a denial. Ctrl-C aborts the request and the tools it runs. Exit 0 when the answer finished, 1 otherwise.",
  flags: {
    url: URL_FLAG,
    model: { type: 'string', value: 'NAME', help: 'the model to ask (default: kiwi-demo, the offline demo model)' },
    key: KEY_FLAG,
    json: { type: 'boolean', help: 'print the steps and the text as JSON lines' },
  },
  examples: [
    { run: 'kiwi chat "what changed in the last commit?"' },
    { run: 'kiwi chat --model gpt-4o-mini --url http://10.0.0.5:8787 --key "$KIWI_API_KEY" "list the open issues"', about: 'a real model on another machine' },
  ],
});
