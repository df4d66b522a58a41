-- Pandoc filter for the book: links between chapters point at the rendered
-- pages (intro.md#goals -> intro.html#goals); external links stay as they are.
function Link(el)
  if not el.target:match("^%a+:") then
    el.target = el.target:gsub("%.md$", ".html"):gsub("%.md#", ".html#")
  end
  return el
end
