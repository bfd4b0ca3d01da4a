"""Varied texts the oracle tests run every tokenizer on (shared by several test modules)."""

ENGLISH = (
    "The quick brown fox jumps over the lazy dog. It's 3:45pm, isn't it? We've paid $1,234.56 for 12 items "
    "(approx. 102.88 each) — “quoted” text, 'single', and an ellipsis…\n\nA new paragraph after a blank line.\n"
)
CODE = '''def fib(n: int) -> int:
    """Return the n-th Fibonacci number."""
    if n < 2:
        return n
	# a tab-indented comment
    return fib(n - 1) + fib(n - 2)


class Greeter:
        def greet(self, name):  # eight spaces
            print(f"Hello, {name}!")  # 你好
'''
JAPANESE = "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。東京スカイツリーは634メートルです。"
KOREAN = "안녕하세요, 세계! 한국어 텍스트를 토큰화합니다. 다람쥐 헌 쳇바퀴에 타고파."
CHINESE = "我能吞下玻璃而不伤身体。自然语言处理很有趣。"
EMOJI = "Family: 👨‍👩‍👧‍👦, flags: 🇯🇵🇫🇷🏳️‍🌈, skin tones: 👍🏽👋🏿, keycap: 1️⃣, mixed: café naïve 🤖🚀"
WHITESPACE = "a  b   c    d\t\te\n\n\n  f   \r\n g                                         h   \n\t \n "
SPECIAL = "Before<|endoftext|>after <|endoftext|> and <|fim_prefix|>x"
NUMBERS = "3.14159 + 2.71828 = 5.85987; 1234567890 * 987654321 = 1219326311126352690; 0x1F600"
URL = "https://example.com/path/to/page?query=token%20play&lang=ja#section-2"
LONG_RUN = "a" * 5000 + " " + "ー" * 2000 + "🙂" * 300

ALL = {
    "english": ENGLISH,
    "code": CODE,
    "japanese": JAPANESE,
    "korean": KOREAN,
    "chinese": CHINESE,
    "emoji": EMOJI,
    "whitespace": WHITESPACE,
    "special": SPECIAL,
    "numbers": NUMBERS,
    "url": URL,
    "long_run": LONG_RUN,
    "mixed": ENGLISH + CODE + JAPANESE + KOREAN + CHINESE + EMOJI + WHITESPACE + SPECIAL + NUMBERS + URL,
}
