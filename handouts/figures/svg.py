"""A few lines of SVG writing shared by the figure scripts (standard library
only, so the book builds anywhere Python does)."""
from xml.sax.saxutils import escape

FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"


class Svg:
    def __init__(self, width, height):
        self.width, self.height, self.parts = width, height, []

    def rect(self, x, y, w, h, fill="#fff", stroke="#333", rx=3, opacity=1.0):
        self.parts.append(f"<rect x='{x:.1f}' y='{y:.1f}' width='{w:.1f}' height='{h:.1f}' "
                          f"rx='{rx}' fill='{fill}' stroke='{stroke}' fill-opacity='{opacity}'/>")

    def line(self, x1, y1, x2, y2, stroke="#333", width=1.0, dash=None, arrow=False):
        extra = f" stroke-dasharray='{dash}'" if dash else ""
        extra += " marker-end='url(#arrow)'" if arrow else ""
        self.parts.append(f"<line x1='{x1:.1f}' y1='{y1:.1f}' x2='{x2:.1f}' y2='{y2:.1f}' "
                          f"stroke='{stroke}' stroke-width='{width}'{extra}/>")

    def polyline(self, points, stroke="#333", width=2.0):
        text = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.parts.append(f"<polyline points='{text}' fill='none' stroke='{stroke}' "
                          f"stroke-width='{width}'/>")

    def circle(self, x, y, r, fill="#333"):
        self.parts.append(f"<circle cx='{x:.1f}' cy='{y:.1f}' r='{r}' fill='{fill}'/>")

    def text(self, x, y, content, size=13, anchor="middle", weight="normal", fill="#222"):
        self.parts.append(f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' {FONT} "
                          f"text-anchor='{anchor}' font-weight='{weight}' fill='{fill}'>"
                          f"{escape(str(content))}</text>")

    def save(self, path):
        defs = ("<defs><marker id='arrow' viewBox='0 0 10 10' refX='9' refY='5' "
                "markerWidth='7' markerHeight='7' orient='auto-start-reverse'>"
                "<path d='M 0 0 L 10 5 L 0 10 z' fill='#333'/></marker></defs>")
        with open(path, "w") as f:
            f.write(f"<svg xmlns='http://www.w3.org/2000/svg' width='{self.width}' "
                    f"height='{self.height}' viewBox='0 0 {self.width} {self.height}'>"
                    f"<rect width='100%' height='100%' fill='white'/>{defs}"
                    + "".join(self.parts) + "</svg>\n")
